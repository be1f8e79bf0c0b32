import type {Server} from 'node:http'

/**
 * Graceful stop of one HTTP server: stop accepting, let in-flight requests finish, close
 * keep-alive connections as soon as they go idle (polling, because a connection that finishes
 * its request after `close()` would otherwise idle until keepAliveTimeout), and after `graceMs`
 * cut whatever is left.
 */
export async function shutdownServer(server: Server, graceMs: number): Promise<void> {
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
