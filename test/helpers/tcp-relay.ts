import {createConnection, createServer, type Server, type Socket} from 'node:net'

/**
 * A TCP relay on loopback in front of a real server, whose network can fail in two ways, as a
 * partition does: connections stay open, no error is sent, and nothing arrives either way.
 * - `silence()` drops the bytes; `restore()` then resets every connection made so far (the peers'
 *   sockets gone when the partition ends) and relays normally again.
 * - `hold()` keeps the bytes; `release()` delivers them late, in order, on the same connections
 *   (a partition that heals before TCP gives up).
 */
export interface TcpRelay {
  port: number
  silence(): void
  restore(): void
  hold(): void
  release(): void
  /** Stops accepting: new connections are refused, the open ones stay as they are. */
  refuseNew(): void
  close(): Promise<void>
}

export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
  const sockets = new Set<Socket>()
  let mode: 'relay' | 'silent' | 'hold' = 'relay'
  const held: (() => void)[] = []
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => undefined)
  }
  const server: Server = createServer((client) => {
    track(client)
    if (mode === 'silent') return // accepted, never answered: the client's connect timeout decides
    const upstream = createConnection({host: '127.0.0.1', port: targetPort})
    track(upstream)
    const relay = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (mode === 'relay') to.write(chunk)
        else if (mode === 'hold') held.push(() => to.write(chunk))
      })
    relay(client, upstream)
    relay(upstream, client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  // 'close' comes once the server stopped listening and its last connection ended.
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('relay has no port')
  return {
    port: address.port,
    silence: () => {
      mode = 'silent'
    },
    restore: () => {
      for (const s of sockets) s.resetAndDestroy()
      mode = 'relay'
    },
    hold: () => {
      mode = 'hold'
    },
    release: () => {
      mode = 'relay'
      for (const deliver of held.splice(0)) deliver()
    },
    refuseNew: () => {
      server.close()
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      if (server.listening) server.close()
      await closed
    },
  }
}
