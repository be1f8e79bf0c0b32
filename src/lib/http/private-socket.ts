import {randomUUID} from 'node:crypto'
import {mkdtemp, rm} from 'node:fs/promises'
import type {Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

/**
 * A private local endpoint: a unix socket in a fresh 0700 directory (mkdtemp creates it so), or a
 * random named pipe on Windows. Only this user's processes can connect — unlike a loopback port,
 * which every local user can reach. Used between toolgate's own parts (run's bridge, proxy stdio's
 * pipeline), where the listener adds credentials a stranger must not borrow.
 */
export interface PrivateSocket {
  path: string
  remove(): Promise<void>
}

export async function privateSocket(name: string): Promise<PrivateSocket> {
  if (process.platform === 'win32') {
    return {path: `\\\\.\\pipe\\toolgate-${name}-${randomUUID()}`, remove: async () => undefined}
  }
  // A short base (tmpdir) keeps the path under the 104/108-byte limit of sun_path.
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-'))
  return {path: join(dir, `${name}.sock`), remove: () => rm(dir, {recursive: true, force: true})}
}

export function listenOnSocket(server: Server, path: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(path, () => {
      server.off('error', reject)
      resolve()
    })
  })
}
