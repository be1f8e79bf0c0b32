import type {Readable} from 'node:stream'
import {StringDecoder} from 'node:string_decoder'

/**
 * Splits a byte stream into lines (MCP stdio transport: newline-delimited JSON), with a bound on
 * the line length: a line longer than `maxLineBytes` is dropped whole (reported with its length),
 * never buffered without limit. A trailing "\r" is removed (servers on Windows write CRLF).
 */
export function readLines(
  stream: Readable,
  onLine: (line: string) => void,
  options: {maxLineBytes: number; onOversize: (bytes: number) => void},
): void {
  const decoder = new StringDecoder('utf8')
  let buffered = ''
  let dropping = 0 // > 0 while skipping the rest of an oversized line
  const take = (text: string) => {
    let start = 0
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      const piece = text.slice(start, nl)
      start = nl + 1
      if (dropping > 0) {
        options.onOversize(dropping + piece.length)
        dropping = 0
        continue
      }
      const line = buffered + piece
      buffered = ''
      emit(line)
    }
    const rest = text.slice(start)
    if (dropping > 0) dropping += rest.length
    else if (buffered.length + rest.length > options.maxLineBytes) {
      dropping = buffered.length + rest.length
      buffered = ''
    } else buffered += rest
  }
  const emit = (line: string) => {
    const clean = line.endsWith('\r') ? line.slice(0, -1) : line
    if (clean.trim() !== '') onLine(clean)
  }
  stream.on('data', (chunk: Buffer) => take(decoder.write(chunk)))
  stream.on('end', () => {
    const tail = buffered + decoder.end()
    buffered = ''
    if (dropping === 0) emit(tail)
  })
}
