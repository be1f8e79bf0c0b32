import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {Authorizer} from '../../../src/lib/authz/authorizer.ts'
import {filterListResult} from '../../../src/lib/authz/list-filter.ts'
import {listResponseTransform, streamSseMapper} from '../../../src/lib/authz/list-response.ts'
import type {ListKind} from '../../../src/lib/authz/method-table.ts'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {createSseTransform} from '../../../src/lib/mcp/sse.ts'

const authz = new Authorizer(
  validateAuthzConfig({
    version: '1.0',
    type: 'cedarv1',
    cedar: {policies: ['permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };']},
  }),
)
const principal = authz.principal('alice', {})
const filter = (kind: ListKind, result: unknown) => filterListResult(authz, principal, kind, result).result

async function pipe(t: TransformStream<Uint8Array, Uint8Array>, text: string): Promise<string> {
  const w = t.writable.getWriter()
  const read = (async () => {
    let s = ''
    for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>) s += new TextDecoder().decode(c)
    return s
  })()
  await w.write(new TextEncoder().encode(text))
  await w.close()
  return read
}

const LIST = {
  jsonrpc: '2.0',
  id: 4,
  result: {
    tools: [
      {name: 'ro', annotations: {readOnlyHint: true}},
      {name: 'rw', annotations: {readOnlyHint: false}},
    ],
    nextCursor: 'page2',
  },
}

describe('list response rewriting', () => {
  it('filters a JSON answer and keeps nextCursor', async () => {
    const out = JSON.parse(await pipe(listResponseTransform('application/json', 4, 'tools', filter), JSON.stringify(LIST)))
    assert.deepEqual(out.result, {tools: [{name: 'ro', annotations: {readOnlyHint: true}}], nextCursor: 'page2'})
  })

  it('keeps an empty list as []', async () => {
    const out = JSON.parse(await pipe(listResponseTransform('application/json', 4, 'tools', filter), JSON.stringify({...LIST, result: {tools: [{name: 'rw'}]}})))
    assert.deepEqual(out.result.tools, [])
  })

  const malformed: [string, unknown][] = [
    ['tools not an array', {...LIST, result: {tools: {}}}],
    ['an item without a name', {...LIST, result: {tools: [{name: 'ro', annotations: {readOnlyHint: true}}, {title: 'x'}]}}],
    ['a result that is not an object', {...LIST, result: 'x'}],
    ['another id', {...LIST, id: 5}],
  ]
  for (const [label, body] of malformed) {
    it(`fails closed on a JSON answer with ${label}`, async () => {
      const out = await pipe(listResponseTransform('application/json', 4, 'tools', filter), JSON.stringify(body))
      assert.doesNotMatch(out, /"ro"|"rw"/)
      assert.match(out, /"error":\{"code":-32603/)
    })
  }

  it('fails closed on a JSON content type whose body is not JSON', async () => {
    assert.match(await pipe(listResponseTransform('application/json', 4, 'tools', filter), '<html>'), /-32603/)
  })

  it('passes a JSON-RPC error answer unchanged', async () => {
    const err = '{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}'
    assert.equal(await pipe(listResponseTransform('application/json', 4, 'tools', filter), err), err)
  })

  it('filters the matching SSE event, keeps its id, and passes other events', async () => {
    const note = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n'
    const answer = `event: message\nid: 17\ndata: ${JSON.stringify(LIST)}\n\n`
    const out = await pipe(listResponseTransform('text/event-stream', 4, 'tools', filter), note + answer)
    assert.ok(out.startsWith(note))
    assert.match(out, /id: 17\n/)
    assert.doesNotMatch(out, /"rw"/)
    assert.match(out, /"ro"/)
  })

  it('fails closed on a malformed SSE list answer', async () => {
    const out = await pipe(listResponseTransform('text/event-stream', 4, 'tools', filter), `data: ${JSON.stringify({...LIST, result: {tools: 3}})}\n\n`)
    assert.match(out, /-32603/)
  })

  it('filters list-shaped results on a standalone SSE stream', async () => {
    const out = await pipe(createSseTransform(streamSseMapper(filter)), `data: ${JSON.stringify({...LIST, id: 99})}\n\n`)
    assert.doesNotMatch(out, /"rw"/)
  })
})
