#!/usr/bin/env node
// Development entry: Node 24 runs src/**/*.ts directly (type stripping), so no build step is needed.
// We point oclif's explicit command target at the TypeScript source instead of dist/.
import {execute, settings} from '@oclif/core'
import {readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

settings.enableAutoTranspile = false
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
pjson.oclif.commands.target = './src/index.ts'
await execute({development: true, dir: import.meta.url, loadOptions: {root, pjson}})
