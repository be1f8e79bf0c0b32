/**
 * `npm run build:binaries`: the standalone executables of every release target, cross-built on this
 * one machine from the same pinned Node (scripts/release/runtimes.json), into dist-bin/ with
 * archives, a CycloneDX SBOM and SHA256SUMS (docs/distribution.md).
 *
 * Options: --target <id> (repeatable; default all five), --out <dir> (default dist-bin),
 * --no-archives (executables only), --rearchive (no build: write the archives and SHA256SUMS
 * again from the executables in --out, after the release workflow signed some of them).
 */
import {join, resolve} from 'node:path'
import {parseArgs} from 'node:util'
import {buildRelease, rearchive} from './release/release.ts'
import {ROOT, TARGET_IDS, type TargetId} from './release/targets.ts'

const {values} = parseArgs({
  options: {
    target: {type: 'string', multiple: true},
    out: {type: 'string'},
    'no-archives': {type: 'boolean', default: false},
    rearchive: {type: 'boolean', default: false},
  },
})
if (values.rearchive) {
  const dir = resolve(values.out ?? join(ROOT, 'dist-bin'))
  const done = rearchive(dir)
  process.stderr.write(`build-binaries: archives and SHA256SUMS rewritten for ${done.join(', ')}\n`)
  process.exit(0)
}
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
