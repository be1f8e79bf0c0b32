import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, readdirSync, rmSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

/**
 * A minimal npm registry on loopback serving one local package folder (packed with the real
 * `npm pack`): the packument at `/<name>` and the tarball, with the integrity npm checks. Enough
 * for the real `npm install --registry <url>` (testing.md: the npm registry is the only one this
 * machine reaches; tests use none but loopback).
 */
export interface LocalNpmRegistry {
  /** `http://127.0.0.1:<port>/` */
  url: string
  name: string
  version: string
  /** Requests seen (method and path), newest last. */
  requests: string[]
  close(): Promise<void>
}

export async function serveNpmPackage(folder: string): Promise<LocalNpmRegistry> {
  const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as {
    name: string
    version: string
    bin?: unknown
  }
  const out = mkdtempSync(join(tmpdir(), 'tg-npm-pack-'))
  execFileSync('npm', ['pack', folder, '--pack-destination', out], {stdio: 'ignore'})
  const file = readdirSync(out).find((f) => f.endsWith('.tgz'))!
  const tarball = readFileSync(join(out, file))
  rmSync(out, {recursive: true, force: true})
  const requests: string[] = []
  let base = ''
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`)
    const path = decodeURIComponent(req.url ?? '/')
    if (path === `/${manifest.name}`) {
      const packument = {
        name: manifest.name,
        'dist-tags': {latest: manifest.version},
        versions: {
          [manifest.version]: {
            ...manifest,
            dist: {
              tarball: `${base}${manifest.name}/-/${file}`,
              shasum: createHash('sha1').update(tarball).digest('hex'),
              integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
            },
          },
        },
      }
      res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(packument))
    } else if (path === `/${manifest.name}/-/${file}`) {
      res.writeHead(200, {'content-type': 'application/octet-stream'}).end(tarball)
    } else res.writeHead(404).end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return {
    url: base,
    name: manifest.name,
    version: manifest.version,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  }
}
