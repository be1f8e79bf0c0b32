import {createConnection, createServer, type Server, type Socket} from 'node:net'

/**
 * A TCP relay on loopback in front of a real server, which can fall silent like a network
 * partition: connections stay open but nothing passes either way and no error is sent. `restore`
 * resets every connection made so far (as a partition that ends with the peers' sockets gone)
 * and relays normally again.
 */
export interface TcpRelay {
  port: number
  silence(): void
  restore(): void
  close(): Promise<void>
}

export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
  const sockets = new Set<Socket>()
  let silent = false
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => undefined)
  }
  const server: Server = createServer((client) => {
    track(client)
    if (silent) return // accepted, never answered: the client's connect timeout decides
    const upstream = createConnection({host: '127.0.0.1', port: targetPort})
    track(upstream)
    const relay = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (!silent) to.write(chunk) // while silent, bytes are dropped as a partition drops them
      })
    relay(client, upstream)
    relay(upstream, client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('relay has no port')
  return {
    port: address.port,
    silence: () => {
      silent = true
    },
    restore: () => {
      for (const s of sockets) s.resetAndDestroy()
      silent = false
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
