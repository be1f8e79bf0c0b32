import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {PassThrough} from 'node:stream'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {promptHidden, promptNewPassword, readPipedValue} from '../../../src/lib/secrets/input.ts'

// Plain Node streams stand in for the terminal: no pseudo-terminal is available to the test runner.
// setRawMode is recorded so the test can check that echo is turned off and restored.
function tty() {
  const input = Object.assign(new PassThrough(), {isTTY: true, modes: [] as boolean[]})
  const withRaw = Object.assign(input, {setRawMode: (m: boolean) => input.modes.push(m)})
  const output = new PassThrough()
  let written = ''
  output.on('data', (d: Buffer) => (written += d.toString()))
  return {input: withRaw, output, written: () => written}
}

describe('secret value input', () => {
  const piped: Array<[string, string]> = [
    ['value\n', 'value'],
    ['value\r\n', 'value'],
    ['value', 'value'],
    ['two\n\n', 'two\n'],
    ['a\nb\n', 'a\nb'],
  ]
  for (const [raw, expected] of piped) {
    it(`reads ${JSON.stringify(raw)} from a pipe as ${JSON.stringify(expected)}`, async () => {
      const s = new PassThrough()
      s.end(raw)
      assert.equal(await readPipedValue(s), expected)
    })
  }

  it('refuses a piped value over 64 KiB', async () => {
    const s = new PassThrough()
    s.end(Buffer.alloc(70 * 1024, 0x61))
    await assert.rejects(readPipedValue(s), (err) => isToolgateError(err, 'ERR_USAGE'))
  })

  it('reads a hidden line in raw mode without echoing it, and restores the mode', async () => {
    const t = tty()
    const answer = promptHidden('Value: ', t.input, t.output)
    t.input.write('se')
    t.input.write('cX\u007fret\r')
    assert.equal(await answer, 'secret')
    assert.deepEqual(t.input.modes, [true, false])
    assert.equal(t.written().includes('secret'), false)
    assert.match(t.written(), /^Value: /)
  })

  it('cancels on Ctrl-C', async () => {
    const t = tty()
    const answer = promptHidden('Value: ', t.input, t.output)
    t.input.write('abc\u0003')
    await assert.rejects(answer, (err) => isToolgateError(err, 'ERR_USAGE'))
    assert.deepEqual(t.input.modes, [true, false])
  })

  it('asks twice for a new master password and refuses a mismatch', async () => {
    const t = tty()
    const answer = promptNewPassword(t.input, t.output)
    t.input.write('first-password\r')
    await new Promise((r) => setImmediate(r))
    t.input.write('other-password\r')
    await assert.rejects(
      answer,
      (err) => isToolgateError(err, 'ERR_USAGE') && /differ/.test(err.message),
    )
  })
})
