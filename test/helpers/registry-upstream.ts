/**
 * An upstream registry document served over loopback HTTP for `file.url` sources: it counts every
 * fetch (with its time), serves generation `g` of a fixed set of servers (each description says
 * `gen-<g>`, so a reader can tell which sync a page came from), and can hold requests open
 * (a sync stuck mid-way) until released.
 */
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

export interface RegistryUpstream {
  url: string
  fetches: number[]
  generation: number
  /** While true, new requests are held open (never answered) until `release()`. */
  hold: boolean
  held: number
  release(): void
  close(): Promise<void>
}

export function registryDocument(generation: number, names: number): string {
  const servers = []
  for (let i = 0; i < names; i++) {
    const name = `io.gen/server-${String(i).padStart(5, '0')}`
    servers.push({name, version: '1.0.0', description: `gen-${generation} server ${i}`})
  }
  return JSON.stringify({version: '1.0.0', data: {servers}})
}

export async function startRegistryUpstream(names: number): Promise<RegistryUpstream> {
  const waiting: ServerResponse[] = []
  const up: RegistryUpstream = {
    url: '',
    fetches: [],
    generation: 1,
    hold: false,
    held: 0,
    release() {
      up.hold = false
      for (const res of waiting.splice(0)) res.destroy()
    },
    close: async () => {
      up.release()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    up.fetches.push(Date.now())
    if (up.hold) {
      up.held++
      waiting.push(res)
      return
    }
    const body = registryDocument(up.generation, names)
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    })
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/registry.json`
  return up
}
