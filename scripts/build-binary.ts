/**
 * `npm run build:binary`: the standalone executable for this machine only, as build/toolgate
 * (the same pipeline as `npm run build:binaries`, scripts/release/build.ts, without archives).
 * Options: --out <file> (default build/toolgate).
 */
import {join, resolve} from 'node:path'
import {parseArgs} from 'node:util'
import {buildTarget, hostTarget} from './release/build.ts'
import {buildFacts} from './release/release.ts'
import {ROOT} from './release/targets.ts'

const {values} = parseArgs({options: {out: {type: 'string'}}})
const host = hostTarget()
if (!host)
  throw new Error(`no release target matches this machine (${process.platform}-${process.arch})`)
const out = resolve(values.out ?? join(ROOT, 'build', `toolgate${host.exe}`))
const started = Date.now()
await buildTarget(host.id, out, buildFacts(), (msg) =>
  process.stderr.write(`build-binary: ${msg}\n`),
)
process.stderr.write(
  `build-binary: wrote ${out} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
)
