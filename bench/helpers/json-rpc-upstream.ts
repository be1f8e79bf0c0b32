/**
 * The benchmarks' JSON-RPC upstream: a tiny node:http responder in its own process (run with
 * `node --input-type=module -e UPSTREAM`; prints {"port"} when listening). POST answers a
 * tools/call echo; GET /big streams 100 MB. BODY is the request the proxy benchmarks send.
 */
export const BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {name: 'echo', arguments: {message: 'hi'}},
})

export const UPSTREAM = `
import {createServer} from 'node:http'
const chunk = Buffer.alloc(65536, 120)
const s = createServer((req, res) => {
  if (req.url === '/big') {
    let left = 100 * 1024 * 1024
    res.writeHead(200, {'content-type': 'application/octet-stream', 'content-length': String(left)})
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length)
        left -= n
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump)
      }
      res.end()
    }
    return pump()
  }
  const parts = []
  req.on('data', (c) => parts.push(c))
  req.on('end', () => {
    let id = null
    try { id = JSON.parse(Buffer.concat(parts)).id } catch {}
    const body = JSON.stringify({jsonrpc: '2.0', id, result: {content: [{type: 'text', text: 'Echo: hi'}]}})
    res.writeHead(200, {'content-type': 'application/json', 'content-length': Buffer.byteLength(body)})
    res.end(body)
  })
})
s.keepAliveTimeout = 65000
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({port: s.address().port})))
`
