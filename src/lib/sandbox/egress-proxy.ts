import type {IncomingMessage, Server} from 'node:http'
import {connect, Server as NetServer, type AddressInfo, type Socket} from 'node:net'
import type {Duplex} from 'node:stream'
import {createServer} from '../http/node-http.ts'
import type {Logger} from '../log/logger.ts'
import {limitConnections, SERVER_LIMITS, type ConnectionBudget} from '../proxy/server-limits.ts'
import {allowsConnection, type PermissionProfile} from './profile.ts'
import {forwardPlain, type PlainForwarding} from './egress-plain.ts'
import {relayTo} from './relay.ts'

/**
 * The sandbox's one way out (issue 32): an HTTP proxy that accepts the connections of the
 * sandbox's own loopback port, whose listening socket the init inside hands over (init-source.ts,
 * egress-channel.ts), so a download is copied once, here. It allows exactly the profile's
 * `allow_host` × `allow_port` and answers everything else 403; every connection, allowed or
 * refused, is a log line (`egress`, host, port, decision). HTTPS goes through `CONNECT` (the
 * proxy never sees inside the TLS); plain HTTP as absolute-form requests, forwarded with
 * hop-by-hop and Proxy-* fields removed. Names are resolved here, outside: the sandbox itself has
 * no DNS, so a server that ignores the proxy has no network at all.
 */

export interface EgressProxy {
  /**
   * Serves proxy connections on `where` until the returned listener is closed: a listening
   * socket handed over (the sandbox's own loopback port, from its init: egress-channel.ts), or a
   * port on this machine's loopback (0: any free one) where there is no network namespace.
   */
  serve(where: NetServer | {host: string; port: number}): Promise<EgressListener>
  /** Closes every listener and every connection. */
  close(): Promise<void>
}

export interface EgressListener {
  port: number
  close(): Promise<void>
}

const CONNECT_TIMEOUT_MS = 10_000
// A tunnel with no byte either way for this long is closed (SSE streams send keep-alives sooner).
const TUNNEL_IDLE_MS = 10 * 60_000
// Per listener (one sandbox), and over all of them (`--isolation` starts a sandbox per caller or
// session). Each connection may hold a 1 MiB relay buffer (relay.ts) and node's buffers of its
// two sockets (about 2 MiB in all when both directions stall): about 512 MiB at most.
const MAX_CONNECTIONS = 64
const MAX_CONNECTIONS_IN_ALL = 256
// After the destination closed a tunnel cleanly: how long the client has to read the rest.
const TUNNEL_CLOSE_GRACE_MS = 30_000

/** `host:port` of a CONNECT target or an absolute URI; undefined when malformed. */
export function parseAuthority(text: string): {host: string; port: number} | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]/@\s]+):(\d{1,5})$/.exec(text)
  if (!m) return undefined
  const port = Number(m[2])
  if (port < 1 || port > 65535) return undefined
  return {host: m[1]!.replace(/^\[|\]$/g, ''), port}
}

export function startEgressProxy(
  profile: PermissionProfile,
  logger: Logger,
  onDecision?: (decision: 'allow' | 'deny') => void,
  /** Tests shorten the grace a client has after a tunnel's destination closed, and lower the limit. */
  limits: {closeGraceMs?: number; maxConnectionsInAll?: number} = {},
): EgressProxy {
  const closeGraceMs = limits.closeGraceMs ?? TUNNEL_CLOSE_GRACE_MS
  const log = logger.child({component: 'egress'})
  const decide = (host: string, port: number, method: string): boolean => {
    const allowed = allowsConnection(profile, host, port)
    log.info('egress', {host, port, method, decision: allowed ? 'allow' : 'deny'})
    onDecision?.(allowed ? 'allow' : 'deny')
    return allowed
  }
  const listeners = new Set<EgressListener>()
  // Client connections a plain-http response is being relayed on (forwardPlain).
  const relaying = new WeakSet<Socket>()
  const plain: PlainForwarding = {
    decide,
    log,
    relaying,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    idleMs: TUNNEL_IDLE_MS,
  }
  const budget: ConnectionBudget = {
    open: 0,
    max: limits.maxConnectionsInAll ?? MAX_CONNECTIONS_IN_ALL,
  }

  async function serve(where: NetServer | {host: string; port: number}): Promise<EgressListener> {
    // A server of its own per listener: each sandbox has its own connection limit, and node's
    // header and request timeouts run only on a listening server.
    const server: Server = createServer(SERVER_LIMITS, (req, res) => {
      if (!refused(req.socket)) forwardPlain(plain, req, res)
    })
    const refused = limitConnections(server, MAX_CONNECTIONS, log, budget)
    // A parse error or timeout on a connection whose response is being relayed: node:http would
    // write its own 400/408/431 into the middle of that response. Such a connection just closes.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (relaying.has(socket) || !socket.writable) return void socket.destroy()
      const status =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? '431 Request Header Fields Too Large'
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT'
            ? '408 Request Timeout'
            : '400 Bad Request'
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
      socket.destroySoon()
    })
    // Every client socket, tunnels included (node:http forgets a socket once it is a tunnel).
    const sockets = new Set<Socket>()
    server.on('connection', (socket: Socket) => {
      sockets.add(socket)
      socket.once('close', () => sockets.delete(socket))
    })
    server.on('connect', (req: IncomingMessage, duplex: Duplex, head: Buffer) => {
      if (!refused(duplex as Socket)) tunnel(req, duplex as Socket, head)
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      const done = () => {
        server.off('error', reject)
        resolve()
      }
      if (where instanceof NetServer) server.listen(where, done)
      else server.listen(where.port, where.host, done)
    })
    const listener: EgressListener = {
      port: (server.address() as AddressInfo).port,
      close: async () => {
        listeners.delete(listener)
        const closed = new Promise((resolve) => server.close(resolve))
        for (const socket of sockets) socket.destroy()
        await closed
      },
    }
    listeners.add(listener)
    return listener
  }

  // CONNECT host:port — a tunnel (HTTPS, or anything TCP the profile allows).
  function tunnel(req: IncomingMessage, client: Socket, head: Buffer): void {
    client.on('error', () => undefined)
    // The client's side has a clock of its own: a tunnel the sandbox leaves open is closed.
    client.setTimeout(TUNNEL_IDLE_MS, () => client.destroy())
    const target = parseAuthority(req.url ?? '')
    if (!target) return refuse(client, '400 Bad Request', 'CONNECT needs host:port')
    if (!decide(target.host, target.port, 'CONNECT'))
      return refuse(
        client,
        '403 Forbidden',
        `${target.host}:${target.port} is not allowed by the permission profile`,
      )
    // Downloads, the heavy direction, through one reused buffer (relay.ts); uploads piped.
    const download = relayTo(client)
    const upstream = connect({
      host: target.host,
      port: target.port,
      timeout: CONNECT_TIMEOUT_MS,
      onread: download.onread,
    })
    download.from(upstream)
    // Nothing is read before the client has its 200 (a server that speaks first would otherwise
    // be relayed ahead of it): reading starts in 'connect'.
    upstream.pause()
    let connected = false
    upstream.once('timeout', () => upstream.destroy(new Error('connect timeout')))
    upstream.once('connect', () => {
      connected = true
      upstream.setTimeout(TUNNEL_IDLE_MS)
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length) upstream.write(head)
      client.pipe(upstream)
      upstream.resume()
    })
    upstream.on('error', (err) => {
      log.info('egress connection failed', {
        host: target.host,
        port: target.port,
        reason: err.message,
      })
      if (!connected && !client.destroyed)
        refuse(client, '502 Bad Gateway', 'the destination could not be reached')
      else client.destroy()
    })
    client.on('close', () => upstream.destroy())
    // A clean end reached the client through `end` (what it still has to receive is flushed
    // first), and it has a short while to read it and close; a broken upstream breaks the
    // client's side at once.
    upstream.on('close', (hadError) => {
      if (hadError) client.destroy()
      else client.setTimeout(closeGraceMs)
    })
  }

  return {
    serve,
    close: async () => {
      await Promise.all([...listeners].map((l) => l.close()))
    },
  }
}

function refuse(client: Duplex, status: string, text: string): void {
  const body = JSON.stringify({error: text})
  client.end(
    `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  )
}
