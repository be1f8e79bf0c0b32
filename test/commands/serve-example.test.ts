/**
 * The quick start of the README: `toolgate serve --config examples/anonymous.yaml` answers the
 * example registry, and paging through it with the default page size sees every version once.
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {getJson, startServe} from '../helpers/serve-process.ts'

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples')
type List = {
  servers: {server: {name: string; version: string}}[]
  metadata: {count: number; nextCursor?: string}
}

test('serves the example registry: every version once across default-size pages, one latest per server', async (t) => {
  const doc = JSON.parse(readFileSync(join(EXAMPLES, 'registry.json'), 'utf8')) as {
    data: {servers: {name: string; version: string}[]}
  }
  const expected = new Set(doc.data.servers.map((s) => `${s.name}@${s.version}`))
  const names = new Set(doc.data.servers.map((s) => s.name))
  const s = await startServe(['--config', join(EXAMPLES, 'anonymous.yaml')])
  t.after(() => s.stop())
  const seen: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 100; page++) {
    const r = await getJson(
      `${s.url}/registry/default/v0.1/servers${cursor ? `?cursor=${cursor}` : ''}`,
    )
    assert.equal(r.status, 200)
    const body = r.body as List
    assert.ok(body.metadata.count <= 30)
    seen.push(...body.servers.map((e) => `${e.server.name}@${e.server.version}`))
    cursor = body.metadata.nextCursor
    if (!cursor) break
  }
  assert.equal(seen.length, expected.size)
  assert.deepEqual(new Set(seen), expected)
  const latest = (await getJson(`${s.url}/registry/default/v0.1/servers?version=latest&limit=100`))
    .body as List
  assert.equal(latest.servers.length, names.size)
})
