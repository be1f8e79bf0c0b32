import assert from 'node:assert/strict'
import {brotliCompressSync, gzipSync} from 'node:zlib'
import {describe, it} from 'node:test'
import {Authorizer} from '../../../src/lib/authz/authorizer.ts'
import {filterListResult} from '../../../src/lib/authz/list-filter.ts'
import {
  listResponseTransform,
  streamResponseTransform,
  streamSseMapper,
} from '../../../src/lib/authz/list-response.ts'
import type {ListKind} from '../../../src/lib/authz/method-table.ts'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {createSseTransform} from '../../../src/lib/mcp/sse.ts'

const authz = new Authorizer(
  validateAuthzConfig({
    version: '1.0',
    type: 'cedarv1',
    cedar: {
      policies: [
        'permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
      ],
    },
  }),
)
const principal = authz.principal('alice', {})
const filter = (kind: ListKind, result: unknown) =>
  filterListResult(authz, principal, kind, result).result

async function pipe(
  t: TransformStream<Uint8Array, Uint8Array>,
  input: string | Uint8Array | Uint8Array[],
): Promise<string> {
  const w = t.writable.getWriter()
  const read = (async () => {
    let s = ''
    for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>)
      s += new TextDecoder().decode(c)
    return s
  })()
  const chunks =
    typeof input === 'string'
      ? [new TextEncoder().encode(input)]
      : Array.isArray(input)
        ? input
        : [input]
  // A transform that refuses may error its writable side; the reader sees what was sent before.
  try {
    for (const c of chunks) await w.write(c)
    await w.close()
  } catch {
    // reported through `read`
  }
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
    const out = JSON.parse(
      await pipe(
        listResponseTransform('application/json', 4, 'tools', filter),
        JSON.stringify(LIST),
      ),
    )
    assert.deepEqual(out.result, {
      tools: [{name: 'ro', annotations: {readOnlyHint: true}}],
      nextCursor: 'page2',
    })
  })

  it('keeps an empty list as []', async () => {
    const out = JSON.parse(
      await pipe(
        listResponseTransform('application/json', 4, 'tools', filter),
        JSON.stringify({...LIST, result: {tools: [{name: 'rw'}]}}),
      ),
    )
    assert.deepEqual(out.result.tools, [])
  })

  const malformed: [string, unknown][] = [
    ['tools not an array', {...LIST, result: {tools: {}}}],
    [
      'an item without a name',
      {...LIST, result: {tools: [{name: 'ro', annotations: {readOnlyHint: true}}, {title: 'x'}]}},
    ],
    ['a result that is not an object', {...LIST, result: 'x'}],
    ['another id', {...LIST, id: 5}],
  ]
  for (const [label, body] of malformed) {
    it(`fails closed on a JSON answer with ${label}`, async () => {
      const out = await pipe(
        listResponseTransform('application/json', 4, 'tools', filter),
        JSON.stringify(body),
      )
      assert.doesNotMatch(out, /"ro"|"rw"/)
      assert.match(out, /"error":\{"code":-32603/)
    })
  }

  it('fails closed on a JSON content type whose body is not JSON', async () => {
    assert.match(
      await pipe(listResponseTransform('application/json', 4, 'tools', filter), '<html>'),
      /-32603/,
    )
  })

  it('passes a JSON-RPC error answer unchanged', async () => {
    const err = '{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}'
    assert.equal(
      await pipe(listResponseTransform('application/json', 4, 'tools', filter), err),
      err,
    )
  })

  it('filters the matching SSE event, keeps its id, and passes other events', async () => {
    const note =
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n'
    const answer = `event: message\nid: 17\ndata: ${JSON.stringify(LIST)}\n\n`
    const out = await pipe(
      listResponseTransform('text/event-stream', 4, 'tools', filter),
      note + answer,
    )
    assert.ok(out.startsWith(note))
    assert.match(out, /id: 17\n/)
    assert.doesNotMatch(out, /"rw"/)
    assert.match(out, /"ro"/)
  })

  it('fails closed on a malformed SSE list answer', async () => {
    const out = await pipe(
      listResponseTransform('text/event-stream', 4, 'tools', filter),
      `data: ${JSON.stringify({...LIST, result: {tools: 3}})}\n\n`,
    )
    assert.match(out, /-32603/)
  })

  it('filters list-shaped results on a standalone SSE stream', async () => {
    const out = await pipe(
      createSseTransform(streamSseMapper(filter)),
      `data: ${JSON.stringify({...LIST, id: 99})}\n\n`,
    )
    assert.doesNotMatch(out, /"rw"/)
  })

  // Review finding: on a POST's SSE stream only the event answering the request was filtered.
  it('filters every list-shaped response on a POST stream, not only the answer to the request', async () => {
    const other = `event: message\ndata: ${JSON.stringify({...LIST, id: 99})}\n\n`
    const answer = `event: message\ndata: ${JSON.stringify(LIST)}\n\n`
    const out = await pipe(
      listResponseTransform('text/event-stream', 4, 'tools', filter),
      other + answer,
    )
    assert.doesNotMatch(out, /"rw"/)
    assert.equal(out.match(/"ro"/g)?.length, 2, out)
  })

  it('filters prompts and resources lists in other responses on a POST stream (nothing is permitted for them here)', async () => {
    const other = `data: ${JSON.stringify({jsonrpc: '2.0', id: 'x', result: {prompts: [{name: 'p'}], resources: [{uri: 'file:///a'}]}})}\n\n`
    const out = await pipe(listResponseTransform('text/event-stream', 4, 'tools', filter), other)
    assert.deepEqual(JSON.parse(out.replace(/^data: /, '')).result, {prompts: [], resources: []})
  })

  it('fails closed on a malformed list in another response on a POST stream', async () => {
    const other = `data: ${JSON.stringify({...LIST, id: 99, result: {tools: [{name: 'rw'}, {title: 'no name'}]}})}\n\n`
    const out = await pipe(listResponseTransform('text/event-stream', 4, 'tools', filter), other)
    assert.doesNotMatch(out, /"rw"|no name/)
    assert.match(out, /"id":99,"error":\{"code":-32603/)
  })

  it('fails closed when another response on a POST stream has a tools key that is not an array', async () => {
    const out = await pipe(
      listResponseTransform('text/event-stream', 4, 'tools', filter),
      `data: ${JSON.stringify({...LIST, id: 99, result: {tools: {rw: {}}}})}\n\n`,
    )
    assert.doesNotMatch(out, /"rw"/)
    assert.match(out, /-32603/)
  })

  it('filters list responses inside a batch array on an SSE stream', async () => {
    const batch = [
      {jsonrpc: '2.0', method: 'notifications/message', params: {}},
      {...LIST, id: 99},
    ]
    for (const t of [
      listResponseTransform('text/event-stream', 4, 'tools', filter),
      createSseTransform(streamSseMapper(filter)),
    ]) {
      const out = await pipe(t, `data: ${JSON.stringify(batch)}\n\n`)
      assert.doesNotMatch(out, /"rw"/)
      assert.match(out, /notifications\/message/)
      assert.match(out, /"ro"/)
    }
  })

  it('passes server requests and notifications on a POST stream untouched', async () => {
    const note = `data: ${JSON.stringify({jsonrpc: '2.0', id: 7, method: 'sampling/createMessage', params: {tools: [{name: 'rw'}]}})}\n\n`
    assert.equal(
      await pipe(listResponseTransform('text/event-stream', 4, 'tools', filter), note),
      note,
    )
  })

  // Review finding: compressed upstream bodies were decoded as UTF-8 and, for a non-JSON content type, passed on.
  const RAW = JSON.stringify(LIST)
  const coded: [string, string | undefined, Record<string, string> | undefined, Uint8Array][] = [
    [
      'a gzip JSON body with its content-encoding header',
      'application/json',
      {'content-encoding': 'gzip'},
      gzipSync(RAW),
    ],
    [
      'a gzip JSON body whose header the proxy did not hand over',
      'application/json',
      undefined,
      gzipSync(RAW),
    ],
    [
      'a gzip body with a non-JSON content type',
      'application/octet-stream',
      undefined,
      gzipSync(RAW),
    ],
    ['a gzip body without a content type', undefined, undefined, gzipSync(RAW)],
    [
      'a brotli JSON body declared br',
      'application/json',
      {'content-encoding': 'br'},
      brotliCompressSync(RAW),
    ],
    [
      'a plain list declared with a coding (the header is believed)',
      'application/json',
      {'content-encoding': 'deflate'},
      new TextEncoder().encode(RAW),
    ],
    [
      'a plain JSON list sent as text/plain',
      'text/plain',
      undefined,
      new TextEncoder().encode(RAW),
    ],
    [
      'a plain JSON list sent as text/html',
      'text/html; charset=utf-8',
      undefined,
      new TextEncoder().encode(RAW),
    ],
  ]
  for (const [label, type, headers, body] of coded) {
    it(`fails closed on ${label}: JSON-RPC error, logged`, async () => {
      const reasons: string[] = []
      const out = await pipe(
        listResponseTransform(type, 4, 'tools', filter, {
          headers,
          onRefused: (r) => reasons.push(r),
        }),
        body,
      )
      assert.equal(
        out,
        '{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"Invalid list response from the MCP server"}}',
      )
      assert.equal(reasons.length, 1)
    })
  }

  const codedSse: [string, Record<string, string> | undefined, Uint8Array][] = [
    ['gzip with its header', {'content-encoding': 'gzip'}, gzipSync(`data: ${RAW}\n\n`)],
    ['gzip without the header', undefined, gzipSync(`data: ${RAW}\n\n`)],
    [
      'x-gzip, identity listed twice',
      {'content-encoding': 'identity, x-gzip'},
      gzipSync(`data: ${RAW}\n\n`),
    ],
  ]
  for (const [label, headers, body] of codedSse) {
    it(`fails closed on a coded SSE list answer (${label}) with an error event`, async () => {
      const reasons: string[] = []
      const out = await pipe(
        listResponseTransform('text/event-stream', 4, 'tools', filter, {
          headers,
          onRefused: (r) => reasons.push(r),
        }),
        body,
      )
      assert.equal(
        out,
        'event: message\ndata: {"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"Invalid list response from the MCP server"}}\n\n',
      )
      assert.equal(reasons.length, 1)
    })
  }

  it('stops passing events once an SSE body turns out not to be UTF-8', async () => {
    const first = new TextEncoder().encode(`data: ${JSON.stringify({...LIST, id: 99})}\n\n`)
    const out = await pipe(listResponseTransform('text/event-stream', 4, 'tools', filter), [
      first,
      new Uint8Array([0xff, 0xfe, 0x0a, 0x0a]),
      new TextEncoder().encode(`data: ${RAW}\n\n`),
    ])
    assert.doesNotMatch(out, /"rw"/)
    assert.match(out, /-32603/)
  })

  it('filters with content-encoding identity and with media type parameters or upper case', async () => {
    for (const [type, headers] of [
      ['application/json', {'content-encoding': 'identity'}],
      ['Application/JSON; charset=utf-8', undefined],
      ['TEXT/EVENT-STREAM', undefined],
    ] as const) {
      const body = type.startsWith('TEXT') ? `data: ${RAW}\n\n` : RAW
      const out = await pipe(listResponseTransform(type, 4, 'tools', filter, {headers}), body)
      assert.match(out, /"ro"/, type)
      assert.doesNotMatch(out, /"rw"/, type)
    }
  })

  it('keeps an empty non-JSON body empty (it reveals nothing)', async () => {
    assert.equal(await pipe(listResponseTransform('text/plain', 4, 'tools', filter), ''), '')
  })

  it('filters a GET stream whatever its content type (MCP clients read it as SSE)', async () => {
    const out = await pipe(
      streamResponseTransform(filter),
      `data: ${JSON.stringify({...LIST, id: 99})}\n\n`,
    )
    assert.doesNotMatch(out, /"rw"/)
    assert.match(out, /"ro"/)
  })

  it('keeps a non-SSE error body on a GET answer', async () => {
    assert.equal(
      await pipe(streamResponseTransform(filter), '{"error":"Method not allowed"}'),
      '{"error":"Method not allowed"}',
    )
  })

  for (const [label, headers, body] of [
    ['declared gzip', {'content-encoding': 'gzip'}, gzipSync(`data: ${RAW}\n\n`)],
    ['gzip without the header', undefined, gzipSync(`data: ${RAW}\n\n`)],
  ] as const) {
    it(`fails a coded GET stream (${label}) instead of passing it`, async () => {
      const reasons: string[] = []
      const t = streamResponseTransform(filter, {headers, onRefused: (r) => reasons.push(r)})
      await assert.rejects(pipe(t, body))
      assert.equal(reasons.length, 1)
    })
  }
})
