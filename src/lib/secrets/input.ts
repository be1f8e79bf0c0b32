import {ToolgateError} from '../errors.ts'
import {MAX_VALUE_BYTES} from './names.ts'

/**
 * Reading secret values and passwords from the user: piped stdin (CI) or a hidden prompt on a TTY.
 * Never from argv, where other users can see them in `ps` and shell history keeps them.
 * Streams are parameters so the library itself never touches the process's own.
 */

/** Reads all of a non-TTY stream, then strips one trailing newline (`echo value |` adds one). */
export async function readPipedValue(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of input) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer)
    size += buf.length
    if (size > MAX_VALUE_BYTES + 2)
      throw new ToolgateError('ERR_USAGE', `secret value is larger than ${MAX_VALUE_BYTES} bytes`)
    chunks.push(buf)
  }
  return stripOneNewline(Buffer.concat(chunks).toString('utf8'))
}

export function stripOneNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2)
  if (text.endsWith('\n')) return text.slice(0, -1)
  return text
}

export interface TtyInput extends NodeJS.ReadableStream {
  isTTY?: boolean
  setRawMode?(mode: boolean): unknown
}

/**
 * Asks for a line without echoing it (the terminal is put in raw mode; Backspace edits, Ctrl-C and
 * Ctrl-D cancel). The prompt goes to `output` (stderr), so stdout stays clean for scripts.
 */
export function promptHidden(
  question: string,
  input: TtyInput,
  output: NodeJS.WritableStream,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let value = ''
    output.write(question)
    input.setRawMode?.(true)
    input.resume()
    const done = (err?: Error) => {
      input.removeListener('data', onData)
      input.setRawMode?.(false)
      input.pause()
      output.write('\n')
      if (err) reject(err)
      else resolve(value)
    }
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done()
        if (ch === '\u0003' || ch === '\u0004')
          return done(new ToolgateError('ERR_USAGE', 'cancelled'))
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('')
        else if (ch >= ' ') value += ch
      }
    }
    input.on('data', onData)
  })
}

/** Hidden prompt twice; a mismatch is an error rather than a silently mistyped master password. */
export async function promptNewPassword(
  input: TtyInput,
  output: NodeJS.WritableStream,
): Promise<string> {
  const first = await promptHidden(
    'Master password for the toolgate secrets store: ',
    input,
    output,
  )
  const second = await promptHidden('Repeat the master password: ', input, output)
  if (first !== second) throw new ToolgateError('ERR_USAGE', 'the two passwords differ')
  return first
}
