/**
 * The practical ceiling: a bare node:http server answering every request with one fixed JSON body
 * (read from the file given as argv[2]). Runs as its own process, like `toolgate serve`, so both
 * compete with the load generator the same way. Prints `{"url": …}` once listening.
 */
import {createServer} from 'node:http'
import {readFileSync} from 'node:fs'
import type {AddressInfo} from 'node:net'

const file = process.argv[2]
if (!file) throw new Error('usage: bare-server.ts <body.json>')
const body = readFileSync(file)
const server = createServer((_req, res) => {
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': body.length,
    'x-content-type-options': 'nosniff',
  })
  res.end(body)
})
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  const {port} = server.address() as AddressInfo
  process.stdout.write(JSON.stringify({url: `http://127.0.0.1:${port}`}) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
