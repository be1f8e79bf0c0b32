/**
 * `npm test`'s reporter: node's own spec output, plus the name of every skipped test just before
 * the runner's summary lines (`ℹ tests …`, `ℹ skipped …`), which stay the last thing printed about
 * tests because CI counts from them. A skip is a test that did not run: nobody should have to
 * scroll back to find it.
 */
import {spec} from 'node:test/reporters'

interface TestEvent {
  type: string
  data: {name?: string; file?: string; skip?: string | boolean; message?: string; nesting?: number}
}

export default async function* skipReporter(source: AsyncIterable<TestEvent>) {
  const out = new spec()
  const skipped: string[] = []
  let listed = false
  const drain = function* () {
    let chunk: unknown
    while ((chunk = out.read()) !== null) yield String(chunk)
  }
  for await (const event of source) {
    const {type, data} = event
    if (
      (type === 'test:pass' || type === 'test:skip') &&
      data.skip !== undefined &&
      data.skip !== false
    ) {
      const where = data.file ? ` (${data.file.replace(process.cwd() + '/', '')})` : ''
      const reason = typeof data.skip === 'string' ? ` # ${data.skip}` : ''
      skipped.push(`${data.name}${where}${reason}`)
    }
    if (
      !listed &&
      type === 'test:diagnostic' &&
      data.nesting === 0 &&
      /^tests \d+$/.test(data.message ?? '')
    ) {
      listed = true
      if (skipped.length > 0)
        yield (
          `\n﹣ skipped tests (${skipped.length}):\n` +
          skipped.map((s) => `  - ${s}\n`).join('') +
          '\n'
        )
    }
    out.write(event)
    yield* drain()
  }
  out.end()
  await new Promise((resolve) => setImmediate(resolve))
  yield* drain()
}
