import type {Server} from 'node:http'
import {createServer} from '../http/node-http.ts'
import type {Readable, Writable} from 'node:stream'
import type {Logger} from '../log/logger.ts'
import {closeGracefully} from '../http/listen.ts'
import {listenOnSocket, privateSocket} from '../http/private-socket.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import {SERVER_LIMITS} from '../proxy/server-limits.ts'
import {answerJson} from './http-common.ts'
import {LegacySseEndpoint} from './legacy-sse.ts'
import {readLines} from './line-reader.ts'
import {errorMessage, Multiplexer, type Message} from './multiplexer.ts'
import {StreamableHttpEndpoint} from './streamable-http.ts'

/**
 * The stdio ↔ HTTP bridge of `toolgate run` (issue 11). It listens on a private endpoint — a unix
 * socket in a fresh 0700 directory, or a random named pipe on Windows — that only the workload's
 * own proxy pipeline reaches (ProxyConfig.targetSocketPath), so origin checks, incoming auth, Cedar
 * and every limit stay in the one public front.
 */

/** Bytes written to the server's stdin and not yet read by it, past which requests are refused. */
export const MAX_STDIN_BACKLOG = 64 * 1024 * 1024

export interface BridgeOptions {
  logger: Logger
  requestTimeoutMs: number
  maxBodyBytes: number
  maxSessions?: number
  /** Longest stdout line accepted from the server. */
  maxLineBytes?: number
  /** Where stdout lines that are not JSON-RPC go (the server's log); they are never forwarded. */
  onNoise: (line: string) => void
}

export interface StdioPeer {
  stdin: Writable
  stdout: Readable
}

export interface Bridge {
  socketPath: string
  /** Connects a (re)started server process. */
  attach(peer: StdioPeer): void
  /** The server process ended: clients get errors, sessions end, new requests get 503. */
  detach(reason: string): void
  close(): Promise<void>
}

export async function startBridge(options: BridgeOptions): Promise<Bridge> {
  const {logger} = options
  let stdin: Writable | undefined
  const mux = new Multiplexer({
    logger,
    requestTimeoutMs: options.requestTimeoutMs,
    send: (message: Message) => {
      if (!stdin?.writable) return false
      // A server that stops reading its stdin: refuse rather than buffer without bound.
      if (stdin.writableLength > MAX_STDIN_BACKLOG) return false
      // Messages written in one event-loop turn leave in one write: fewer syscalls and wake-ups.
      if (!stdin.writableCorked) {
        stdin.cork()
        const corked = stdin
        process.nextTick(() => corked.uncork())
      }
      stdin.write(JSON.stringify(message) + '\n')
      return true
    },
  })
  const limits = {maxBodyBytes: options.maxBodyBytes, maxSessions: options.maxSessions ?? 1024}
  const streamable = new StreamableHttpEndpoint(mux, limits)
  const legacy = new LegacySseEndpoint(mux, limits)

  const server: Server = createServer(SERVER_LIMITS, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://bridge')
    if (!stdin) {
      res.setHeader('retry-after', '2')
      return answerJson(res, 503, errorMessage(null, -32002, 'the MCP server is not running'))
    }
    const done = (err: unknown) => {
      logger.warn('bridge request failed', {error: (err as Error).message})
      answerJson(res, 500, errorMessage(null, -32603, 'Internal error'))
    }
    if (url.pathname === '/mcp') streamable.handle(req, res).catch(done)
    else if (url.pathname === '/sse') legacy.open(req, res)
    else if (url.pathname === '/messages') legacy.message(req, res, url).catch(done)
    else answerJson(res, 404, errorMessage(null, -32601, 'Not found'))
  })

  const socket = await privateSocket('bridge')
  await listenOnSocket(server, socket.path)

  return {
    socketPath: socket.path,
    attach(peer) {
      stdin = peer.stdin
      peer.stdin.on('error', (err) => logger.debug('server stdin closed', {error: err.message}))
      readLines(
        peer.stdout,
        (line) => {
          let value: unknown
          try {
            value = JSON.parse(line)
          } catch {
            return options.onNoise(line)
          }
          const messages = Array.isArray(value) ? value : [value]
          for (const m of messages) {
            if (isRecord(m) && m.jsonrpc === '2.0') mux.fromServer(m)
            else options.onNoise(line)
          }
        },
        {
          maxLineBytes: options.maxLineBytes ?? 64 * 1024 * 1024,
          onOversize: (bytes) => logger.warn('dropped an oversized line from the server', {bytes}),
        },
      )
    },
    detach(reason) {
      stdin = undefined
      mux.serverGone(reason)
    },
    async close() {
      streamable.closeAll()
      legacy.closeAll()
      await closeGracefully(server, 500)
      await socket.remove()
    },
  }
}
