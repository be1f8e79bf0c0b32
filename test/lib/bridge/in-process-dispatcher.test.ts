import assert from 'node:assert/strict'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {setTimeout as sleep} from 'node:timers/promises'
import {describe, it} from 'node:test'
import {inProcessDispatcher} from '../../../src/lib/bridge/in-process-dispatcher.ts'
import type {RawHeaders, UpstreamHandler} from '../../../src/lib/proxy/forward.ts'
import {readBody} from '../../../src/lib/http/respond.ts'

/** What a front's handler saw, and a way to hold the body (a slow client). */
function recorder(opts: {hold?: boolean} = {}) {
  const seen = {
    status: 0,
    headers: [] as string[],
    body: '',
    completed: false,
    error: undefined as Error | undefined,
    abort: undefined as ((err?: Error) => void) | undefined,
    resume: undefined as (() => void) | undefined,
  }
  const handler: UpstreamHandler = {
    onConnect: (abort) => void (seen.abort = abort),
    onHeaders: (status: number, raw: RawHeaders, resume: () => void) => {
      seen.status = status
      seen.headers = raw.map(String)
      seen.resume = resume
      return true
    },
    onData: (chunk) => {
      seen.body += chunk.toString()
      return !opts.hold
    },
    onComplete: () => void (seen.completed = true),
    onError: (err) => void (seen.error = err),
  }
  return {seen, handler}
}

const request = (body: string | null, method = 'POST') => ({
  origin: 'http://localhost',
  path: '/mcp?x=1',
  method,
  headers: {'Content-Type': 'application/json', 'x-toolgate-principal': 'p'},
  body: body === null ? null : Buffer.from(body),
})

describe('in-process dispatcher (the gateway front → its bridge)', () => {
  it('hands over method, path, headers and body; the answer arrives as written', async () => {
    let got: {method?: string; url?: string; headers?: unknown; body?: string} = {}
    const dispatcher = inProcessDispatcher((req: IncomingMessage, res: ServerResponse) => {
      void readBody(req, 1024).then((body) => {
        got = {method: req.method, url: req.url, headers: req.headers, body: body.toString()}
        res.setHeader('mcp-session-id', 's1')
        res.writeHead(200, {'content-type': 'application/json'})
        res.end('{"ok":true}')
      })
    })
    const {seen, handler} = recorder()
    dispatcher.dispatch(request('{"a":1}'), handler)
    await sleep(20)
    assert.deepEqual(got, {
      method: 'POST',
      url: '/mcp?x=1',
      headers: {
        'content-type': 'application/json',
        'x-toolgate-principal': 'p',
        'content-length': '7',
      },
      body: '{"a":1}',
    })
    assert.equal(seen.status, 200)
    assert.deepEqual(seen.headers, ['mcp-session-id', 's1', 'content-type', 'application/json'])
    assert.equal(seen.body, '{"ok":true}')
    assert.equal(seen.completed, true)
    assert.equal(seen.error, undefined)
  })

  it('a slow front holds the writes: writableLength grows, and drains on resume', async () => {
    let response: ServerResponse | undefined
    const dispatcher = inProcessDispatcher((_req, res) => {
      response = res
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.flushHeaders()
      for (let i = 0; i < 5; i++) res.write(`data: ${i}\n\n`)
    })
    const {seen, handler} = recorder({hold: true})
    dispatcher.dispatch(request(null, 'GET'), handler)
    await sleep(10)
    assert.equal(seen.body, 'data: 0\n\n', 'one chunk, then held')
    assert.ok(response!.writableLength > 0)
    for (let i = 0; i < 5; i++) {
      seen.resume!()
      await sleep(1)
    }
    assert.equal(seen.body, [0, 1, 2, 3, 4].map((i) => `data: ${i}\n\n`).join(''))
    assert.equal(response!.writableLength, 0)
  })

  it('the front going away closes the bridge’s response (it cancels the request there)', async () => {
    let closed = false
    let response: ServerResponse | undefined
    const dispatcher = inProcessDispatcher((_req, res) => {
      response = res
      res.on('close', () => (closed = true))
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.flushHeaders()
    })
    const {seen, handler} = recorder()
    dispatcher.dispatch(request('{}'), handler)
    await sleep(10)
    seen.abort!(new Error('client went away'))
    await sleep(10)
    assert.equal(closed, true)
    assert.equal(response!.destroyed, true)
    assert.match(String(seen.error?.message), /client went away/)
    assert.equal(seen.completed, false)
  })

  it('a response the bridge destroys mid-stream is an error to the front, as a reset socket', async () => {
    const dispatcher = inProcessDispatcher((_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.write('data: 1\n\n')
      setTimeout(() => res.destroy(), 5)
    })
    const {seen, handler} = recorder()
    dispatcher.dispatch(request('{}'), handler)
    await sleep(30)
    assert.equal((seen.error as {code?: string})?.code, 'ECONNRESET')
    assert.equal(seen.completed, false)
  })

  it('a body the bridge does not read is drained once it answered, and destroyed on abort', async () => {
    const {Readable} = await import('node:stream')
    const chunks = () => Readable.from(Array.from({length: 50}, () => Buffer.alloc(64 * 1024, 1)))
    const unread = inProcessDispatcher((_req, res) => {
      res.writeHead(404, {'content-type': 'application/json'})
      res.end('{}')
    })
    const body = chunks()
    const answered = recorder()
    unread.dispatch({...request(null), body}, answered.handler)
    await sleep(50)
    assert.equal(answered.seen.status, 404)
    assert.equal(body.readableEnded, true, 'the rest was read and dropped')
    const hanging = inProcessDispatcher(() => undefined)
    const body2 = chunks()
    const aborted = recorder()
    hanging.dispatch({...request(null), body: body2}, aborted.handler)
    aborted.seen.abort!(new Error('gone'))
    await sleep(10)
    assert.equal(body2.destroyed, true)
  })

  it('closing the dispatcher ends what is open and refuses what comes after', async () => {
    const dispatcher = inProcessDispatcher((_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.flushHeaders()
    })
    const open = recorder()
    dispatcher.dispatch(request('{}'), open.handler)
    await sleep(5)
    await dispatcher.close()
    assert.match(String(open.seen.error?.message), /the workload stopped/)
    const late = recorder()
    dispatcher.dispatch(request('{}'), late.handler)
    assert.equal((late.seen.error as {code?: string})?.code, 'UND_ERR_CLOSED')
  })
})
