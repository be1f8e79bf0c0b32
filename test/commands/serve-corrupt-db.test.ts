import {after, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
  closeSync,
} from 'node:fs'
import {join} from 'node:path'
import {startServe, tempDir, writeConfig} from '../helpers/serve-process.ts'

/**
 * The database is a cache of the sources (issue 18): a corrupt file is moved aside (kept, never
 * deleted), rebuilt from the sources, and a warning names both paths; serving goes on.
 */
const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, {recursive: true, force: true})
})

function setup() {
  const dir = tempDir()
  dirs.push(dir)
  writeConfig(
    dir,
    'registry.json',
    JSON.stringify([{name: 'io.example/kept', description: 'a server', version: '1.0.0'}]),
  )
  const config = writeConfig(
    dir,
    'serve.yaml',
    `sources:\n  - name: s\n    file: {path: ./registry.json}\nregistries:\n  - name: default\n    sources: [s]\nstorage:\n  sqlite: {path: ./cache/registry.db}\nauth: {mode: anonymous}\n`,
  )
  return {dir, config, db: join(dir, 'cache', 'registry.db')}
}

async function names(url: string): Promise<string[]> {
  const res = await fetch(`${url}/registry/default/v0.1/servers`)
  assert.equal(res.status, 200)
  const body = (await res.json()) as {servers: Array<{server: {name: string}}>}
  return body.servers.map((s) => s.server.name)
}

const damages: Array<[string, (db: string) => void]> = [
  ['not a database at all', (db) => writeFileSync(db, 'this is not SQLite\n'.repeat(500))],
  [
    'a real database whose pages were overwritten',
    (db) => {
      const fd = openSync(db, 'r+')
      // Keep the 100-byte header (so it still looks like SQLite), wreck the schema page after it.
      writeSync(fd, Buffer.alloc(3900, 0xa5), 0, 3900, 100)
      closeSync(fd)
    },
  ],
]

describe('serve with a corrupt database file', () => {
  for (const [what, damage] of damages) {
    it(`${what}: moved aside with a warning naming the path, rebuilt, served`, async () => {
      const {dir, config, db} = setup()
      // A first run builds a real database, then it is stopped and damaged.
      const first = await startServe(['--config', config], {dir})
      assert.deepEqual(await names(first.url), ['io.example/kept'])
      assert.equal(await first.stop(), 0)
      for (const suffix of ['-wal', '-shm']) rmSync(db + suffix, {force: true})
      damage(db)
      const broken = readFileSync(db)

      const second = await startServe(['--config', config], {dir})
      try {
        assert.deepEqual(await names(second.url), ['io.example/kept'])
        const warning = second
          .stderr()
          .split('\n')
          .find((l) => l.includes('database file was corrupt'))
        assert.ok(warning, second.stderr())
        assert.match(warning, /WARN/)
        assert.ok(warning.includes(db), `names the path: ${warning}`)
        const aside = readdirSync(join(dir, 'cache')).find((f) => /^registry\.db\.corrupt-/.test(f))
        assert.ok(aside, readdirSync(join(dir, 'cache')).join(', '))
        assert.ok(warning.includes(aside), `names where it went: ${warning}`)
        // The damaged bytes are kept for a post-mortem, untouched.
        assert.deepEqual(readFileSync(join(dir, 'cache', aside)), broken)
        assert.ok(existsSync(db))
      } finally {
        await second.stop()
      }
    })
  }
})
