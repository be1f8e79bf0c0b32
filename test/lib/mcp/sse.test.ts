import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {
  createSseTransform,
  parseSseFields,
  serializeSseEvent,
  type SseEvent,
} from '../../../src/lib/mcp/sse.ts'

async function run(
  chunks: string[],
  mapper: (ev: SseEvent) => string | undefined,
): Promise<string> {
  const t = createSseTransform(mapper)
  const writer = t.writable.getWriter()
  const enc = new TextEncoder()
  const done = (async () => {
    let out = ''
    const dec = new TextDecoder()
    for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>)
      out += dec.decode(c, {stream: true})
    return out
  })()
  for (const c of chunks) await writer.write(enc.encode(c))
  await writer.close()
  return done
}

describe('SSE parsing and re-serialising', () => {
  it('reads data, event, id and retry fields and ignores comments', () => {
    assert.deepEqual(
      parseSseFields([
        ': comment',
        'event: message',
        'id: 7',
        'retry: 100',
        'data: {"a":',
        'data:1}',
      ]),
      {
        event: 'message',
        id: '7',
        retry: '100',
        data: '{"a":\n1}',
      },
    )
  })

  it('serialises multi-line data as several data lines', () => {
    assert.equal(
      serializeSseEvent({event: 'message', id: '1', retry: undefined, data: 'a\nb'}),
      'event: message\nid: 1\ndata: a\ndata: b\n\n',
    )
  })

  it('passes events through byte for byte when the mapper keeps them', async () => {
    const input = ': hi\r\n\r\nevent: message\r\nid: 1\r\ndata: {"x":1}\r\n\r\ndata: two\n\n'
    assert.equal(await run([input], () => undefined), input)
  })

  const splits: [string, string[]][] = [
    ['one chunk', ['event: message\ndata: old\n\ndata: keep\n\n']],
    ['byte-sized chunks', [...'event: message\ndata: old\n\ndata: keep\n\n']],
    [
      'a CRLF split across chunks',
      ['event: message\r\ndata: old\r', '\n\r', '\ndata: keep\r\n\r\n'],
    ],
    ['CR-only line ends', ['event: message\rdata: old\r\rdata: keep\r\r']],
  ]
  for (const [label, chunks] of splits) {
    it(`replaces only the mapped event with ${label}`, async () => {
      const out = await run(chunks, (ev) =>
        ev.data === 'old' ? serializeSseEvent({...ev, data: 'new'}) : undefined,
      )
      assert.match(out, /^event: message\ndata: new\n\n/)
      assert.match(out, /data: keep(\r\n|\r|\n)(\r\n|\r|\n)$/)
      assert.doesNotMatch(out, /old/)
    })
  }

  it('drops an unterminated trailing event instead of passing it unchecked', async () => {
    const out = await run(['data: done\n\ndata: partial'], () => undefined)
    assert.equal(out, 'data: done\n\n')
  })

  it('handles multi-byte characters split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo\n\n')
    const t = createSseTransform((ev) => serializeSseEvent({...ev, data: ev.data?.toUpperCase()}))
    const w = t.writable.getWriter()
    const read = (async () => {
      let s = ''
      for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>)
        s += new TextDecoder().decode(c)
      return s
    })()
    await w.write(bytes.slice(0, 8))
    await w.write(bytes.slice(8))
    await w.close()
    assert.equal(await read, 'data: HÉLLO\n\n')
  })

  it('passes an unterminated tail that holds no data line (a non-SSE error body keeps its text)', async () => {
    assert.equal(
      await run(['data: done\n\n{"error":"Method not allowed"}'], () => undefined),
      'data: done\n\n{"error":"Method not allowed"}',
    )
  })

  it('drops an unterminated tail whose last line is a data line without a colon', async () => {
    assert.equal(await run(['data: done\n\ndata'], () => undefined), 'data: done\n\n')
  })

  async function runBytes(
    chunks: Uint8Array[],
    options?: Parameters<typeof createSseTransform>[1],
  ): Promise<{out: string; error: unknown}> {
    const t = createSseTransform(() => undefined, options)
    const writer = t.writable.getWriter()
    let out = ''
    let error: unknown
    const done = (async () => {
      try {
        for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>)
          out += new TextDecoder().decode(c)
      } catch (err) {
        error = err
      }
    })()
    try {
      for (const c of chunks) await writer.write(c)
      await writer.close()
    } catch {
      // the readable side reports it
    }
    await done
    return {out, error}
  }

  const enc = (s: string) => new TextEncoder().encode(s)
  const notUtf8 = new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0xff, 0x0a, 0x0a]) // a gzip header, then 0xff

  it('fails the stream on bytes that are not UTF-8, after the events before them', async () => {
    const {out, error} = await runBytes([enc('data: one\n\n'), notUtf8, enc('data: two\n\n')])
    assert.equal(out, 'data: one\n\n')
    assert.ok(error instanceof Error && /not UTF-8/.test(error.message), String(error))
  })

  it('fails the stream on a UTF-8 sequence cut off at the end', async () => {
    const {error} = await runBytes([enc('data: one\n\n'), new Uint8Array([0xc3])])
    assert.ok(error instanceof Error, 'a truncated multi-byte character was accepted')
  })

  it('sends the replacement once and discards the rest when onUndecodable gives one', async () => {
    let calls = 0
    const {out, error} = await runBytes(
      [enc('data: one\n\n'), notUtf8, enc('data: two\n\n'), notUtf8],
      {
        onUndecodable: () => {
          calls++
          return 'data: refused\n\n'
        },
      },
    )
    assert.equal(error, undefined)
    assert.equal(out, 'data: one\n\ndata: refused\n\n')
    assert.equal(calls, 1)
  })
})
