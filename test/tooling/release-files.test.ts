/**
 * The release plumbing that cannot run here: the workflow's shape (every target is checked where it
 * runs, publishing waits for all of them) and scripts/sign-macos.sh refusing clearly off macOS.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {parse} from 'yaml'
import {ROOT} from '../binary/binary-helpers.ts'

interface Job {
  needs?: string | string[]
  'runs-on': string
  steps: {run?: string; uses?: string}[]
  strategy?: {matrix: {include: {target: string}[]}}
}

describe('release workflow', () => {
  const wf = parse(readFileSync(join(ROOT, '.github/workflows/release.yml'), 'utf8')) as {
    on: {push: {tags: string[]}}
    jobs: Record<string, Job>
  }
  const runs = (job: string) => wf.jobs[job]!.steps.map((s) => s.run ?? '').join('\n')

  test('runs on version tags: tests first, then the cross-build', () => {
    assert.deepEqual(wf.on.push.tags, ['v[0-9]+.[0-9]+.[0-9]+*'])
    assert.match(runs('test'), /bash \.ci\/run/)
    assert.equal(wf.jobs.build!.needs, 'test')
    assert.match(runs('build'), /npm run build:binaries/)
  })

  test('every target runs somewhere: natively, or linux-arm64 under qemu too', () => {
    assert.match(runs('linux-x64'), /smoke\.sh dist-bin\/toolgate-\*-linux-x64/)
    assert.match(runs('linux-arm64-emulated'), /qemu-aarch64-static/)
    assert.match(runs('linux-arm64-native'), /smoke\.sh dist-bin\/toolgate-\*-linux-arm64/)
    const mac = wf.jobs.macos!.strategy!.matrix.include.map((i) => i.target).sort()
    assert.deepEqual(mac, ['darwin-arm64', 'darwin-x64'])
    assert.match(runs('macos'), /sign-macos\.sh/)
    for (const step of ['--version', '--help', "'serve'", 'install.ps1'])
      assert.ok(runs('windows').includes(step), step)
  })

  test('publishing waits for every check, re-sums signed files and verifies before releasing', () => {
    const needs = wf.jobs.publish!.needs as string[]
    for (const job of ['build', 'linux-x64', 'linux-arm64-emulated', 'macos', 'windows'])
      assert.ok(needs.includes(job), job)
    const script = runs('publish')
    assert.ok(script.indexOf('--rearchive') < script.indexOf('sha256sum -c'))
    assert.ok(script.indexOf('sha256sum -c') < script.indexOf('gh release create'))
  })
})

describe('scripts/sign-macos.sh', () => {
  const sign = (args: string[]) =>
    spawnSync('sh', [join(ROOT, 'scripts/sign-macos.sh'), ...args], {encoding: 'utf8'})

  test('without a file: usage, exit 1', () => {
    const r = sign([])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /^sign-macos\.sh: usage: sign-macos\.sh FILE\.\.\./)
  })

  test(
    'off macOS: says codesign needs a Mac, exit 1, the file untouched',
    {skip: process.platform === 'darwin'},
    () => {
      const file = join(ROOT, 'package.json')
      const before = readFileSync(file)
      const r = sign([file])
      assert.equal(r.status, 1)
      assert.match(r.stderr, /codesign exists only on macOS/)
      assert.ok(readFileSync(file).equals(before))
    },
  )
})
