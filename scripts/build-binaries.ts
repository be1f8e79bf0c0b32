/**
 * `npm run build:binaries`: the standalone executables of every release target, cross-built on this
 * one machine from the same pinned Node (scripts/release/runtimes.json), into dist-bin/ with
 * archives, a CycloneDX SBOM and SHA256SUMS (docs/distribution.md).
 *
 * Options: --target <id> (repeatable; default all five), --out <dir> (default dist-bin),
 * --no-archives (executables only).
 */
import {join, resolve} from 'node:path'
import {parseArgs} from 'node:util'
import {buildRelease} from './release/release.ts'
import {ROOT, TARGET_IDS, type TargetId} from './release/targets.ts'

const {values} = parseArgs({
  options: {
    target: {type: 'string', multiple: true},
    out: {type: 'string'},
    'no-archives': {type: 'boolean', default: false},
  },
})
const targets = (values.target ?? TARGET_IDS) as TargetId[]
for (const t of targets) {
  if (!TARGET_IDS.includes(t))
    throw new Error(`unknown target "${t}"; the targets are ${TARGET_IDS.join(', ')}`)
}
const started = Date.now()
const outDir = resolve(values.out ?? join(ROOT, 'dist-bin'))
await buildRelease({
  targets,
  outDir,
  archives: !values['no-archives'],
  log: (msg) => process.stderr.write(`build-binaries: ${msg}\n`),
})
process.stderr.write(
  `build-binaries: ${targets.length} target(s) into ${outDir} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
)
