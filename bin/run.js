#!/usr/bin/env node
// Production entry: runs the compiled commands in dist/ (npm run build).
import {execute} from '@oclif/core'

await execute({dir: import.meta.url})
