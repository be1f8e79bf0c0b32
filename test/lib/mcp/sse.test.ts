import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {createSseTransform, parseSseFields, serializeSseEvent, type SseEvent} from '../../../src/lib/mcp/sse.ts'

async function run(chunks: string[], mapper: (ev: SseEvent) => string | undefined): Promise<string> {
  const t = createSseTransform(mapper)
  const writer = t.writable.getWriter()
  const enc = new TextEncoder()
  const done = (async () => {
    let out = ''
    const dec = new TextDecoder()
    for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>) out += dec.decode(c, {stream: true})
    return out
  })()
  for (const c of chunks) await writer.write(enc.encode(c))
  await writer.close()
  return done
}

describe('SSE parsing and re-serialising', () => {
  it('reads data, event, id and retry fields and ignores comments', () => {
    assert.deepEqual(parseSseFields([': comment', 'event: message', 'id: 7', 'retry: 100', 'data: {"a":', 'data:1}']), {
      event: 'message',
      id: '7',
      retry: '100',
      data: '{"a":\n1}',
    })
  })

  it('serialises multi-line data as several data lines', () => {
    assert.equal(serializeSseEvent({event: 'message', id: '1', retry: undefined, data: 'a\nb'}), 'event: message\nid: 1\ndata: a\ndata: b\n\n')
  })

  it('passes events through byte for byte when the mapper keeps them', async () => {
    const input = ': hi\r\n\r\nevent: message\r\nid: 1\r\ndata: {"x":1}\r\n\r\ndata: two\n\n'
    assert.equal(await run([input], () => undefined), input)
  })

  const splits: [string, string[]][] = [
    ['one chunk', ['event: message\ndata: old\n\ndata: keep\n\n']],
    ['byte-sized chunks', [...'event: message\ndata: old\n\ndata: keep\n\n']],
    ['a CRLF split across chunks', ['event: message\r\ndata: old\r', '\n\r', '\ndata: keep\r\n\r\n']],
    ['CR-only line ends', ['event: message\rdata: old\r\rdata: keep\r\r']],
  ]
  for (const [label, chunks] of splits) {
    it(`replaces only the mapped event with ${label}`, async () => {
      const out = await run(chunks, (ev) => (ev.data === 'old' ? serializeSseEvent({...ev, data: 'new'}) : undefined))
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
      for await (const c of t.readable as unknown as AsyncIterable<Uint8Array>) s += new TextDecoder().decode(c)
      return s
    })()
    await w.write(bytes.slice(0, 8))
    await w.write(bytes.slice(8))
    await w.close()
    assert.equal(await read, 'data: HÉLLO\n\n')
  })
})
