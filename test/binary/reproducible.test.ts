/**
 * Reproducible release: two builds of the same sources (into different directories) give
 * byte-identical executables, archives, SBOM and SHA256SUMS. Checked on linux-x64, the one target
 * that also carries a V8 code cache (built with a fixed random seed, scripts/release/build.ts).
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, readdirSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'
import {needs} from '../helpers/component.ts'
import {ROOT, runBuild, seaUnsupportedReason} from './binary-helpers.ts'

describe(
  'reproducible build',
  {skip: needs('a linux-x64 build machine', seaUnsupportedReason())},
  () => {
    const work = mkdtempSync(join(tmpdir(), 'toolgate-repro-'))
    after(() => rmSync(work, {recursive: true, force: true}))

    test('two builds of linux-x64 are byte-identical, archive included', {timeout: 600_000}, () => {
      const dirs = ['one', 'two'].map((n) => join(work, n))
      for (const dir of dirs)
        runBuild([
          join(ROOT, 'scripts', 'build-binaries.ts'),
          '--target',
          'linux-x64',
          '--out',
          dir,
        ])
      const [a, b] = dirs as [string, string]
      const names = readdirSync(a).sort()
      assert.deepEqual(names, readdirSync(b).sort())
      assert.ok(
        names.some((n) => n.endsWith('-linux-x64.tar.gz')),
        names.join(', '),
      )
      for (const name of names) {
        const same = readFileSync(join(a, name)).equals(readFileSync(join(b, name)))
        assert.ok(same, `${name} differs between two builds`)
      }
    })
  },
)
