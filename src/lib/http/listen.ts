import type {Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {ToolgateError} from '../errors.ts'

export interface HostPort {
  host: string | undefined
  port: number
}

/**
 * Parses a listen address: `:8080` (all interfaces), `127.0.0.1:8080`, `[::1]:8080`, `localhost:0`.
 * `where` names the flag or field in the error.
 */
export function parseListenAddress(text: string, where: string): HostPort {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim())
  const port = m ? Number(m[3]) : NaN
  if (!m || port > 65535) {
    throw new ToolgateError(
      'ERR_USAGE',
      `${where}: "${text}" is not a listen address (use host:port, :port or [ipv6]:port)`,
    )
  }
  const host = m[1] ?? m[2]
  return {host: host === '' ? undefined : host, port}
}

/** Listens and resolves with the bound address; a busy port is ERR_ADDRESS_IN_USE, never a silent switch. */
export function listen(server: Server, addr: HostPort, where: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening)
      if (err.code === 'EADDRINUSE') {
        reject(
          new ToolgateError(
            'ERR_ADDRESS_IN_USE',
            `${where}: address ${addr.host ?? ''}:${addr.port} is already in use`,
            {cause: err},
          ),
        )
      } else if (err.code === 'EACCES') {
        reject(
          new ToolgateError(
            'ERR_ADDRESS_IN_USE',
            `${where}: permission denied to listen on ${addr.host ?? ''}:${addr.port}`,
            {cause: err},
          ),
        )
      } else {
        reject(
          new ToolgateError(
            'ERR_USAGE',
            `${where}: cannot listen on ${addr.host ?? ''}:${addr.port}: ${err.message}`,
            {cause: err},
          ),
        )
      }
    }
    const onListening = () => {
      server.off('error', onError)
      resolve(server.address() as AddressInfo)
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(addr.port, addr.host)
  })
}

/**
 * Graceful close, the one used by every server toolgate runs: stop accepting, let in-flight
 * requests finish, close keep-alive connections as soon as they go idle (polling, because a
 * connection that finishes its request after `close()` would otherwise idle until
 * keepAliveTimeout and hold the close), and after `graceMs` cut what is left (long-lived SSE
 * streams would otherwise hold shutdown forever).
 */
export async function closeGracefully(server: Server, graceMs = 10_000): Promise<void> {
  if (!server.listening) return
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  server.closeIdleConnections()
  const poll = setInterval(() => server.closeIdleConnections(), 50)
  const cut = setTimeout(() => server.closeAllConnections(), graceMs)
  try {
    await closed
  } finally {
    clearInterval(poll)
    clearTimeout(cut)
  }
}

/**
 * The address a server is actually bound to, as `host:port` (`[::]:8080` for `:8080`, which binds
 * every interface). Logs say this; `urlOf` is only where a local client can reach it.
 */
export function boundOf(info: AddressInfo): string {
  return `${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}`
}

/** True when the bound address accepts connections on every interface (not only loopback). */
export function allInterfaces(info: AddressInfo): boolean {
  return info.address === '0.0.0.0' || info.address === '::'
}

export function urlOf(info: AddressInfo, scheme = 'http'): string {
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address
  return `${scheme}://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${info.port}`
}

/**
 * Checks that `addr` can be listened on now, by listening and closing at once, so a command finds
 * a busy port before it starts anything else (`run` starts a server process first). `where` names
 * the flag. Port 0 is always free.
 */
export async function assertCanListen(addr: HostPort, where: string): Promise<void> {
  if (addr.port === 0) return
  const {createServer} = await import('node:net')
  const probe = createServer()
  await listen(probe as unknown as Server, addr, where)
  await new Promise<void>((resolve) => probe.close(() => resolve()))
}
