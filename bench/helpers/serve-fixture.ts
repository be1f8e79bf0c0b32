/**
 * `toolgate serve` over a generated registry of `versions` versions (scripts/registry-data), on an
 * embedded SQLite file under `work`, anonymous, from source on the pinned Node or from `binary`.
 * Resolves once /readiness answers 200; `loadMs` is start plus the first sync.
 */
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {syntheticServers, wrap} from '../../scripts/registry-data/generate.ts'
import {ROOT, start, waitFor200, type Proc} from './processes.ts'

export async function startServe(
  work: string,
  versions: number,
  binary?: string,
  /** Extra options for the pinned Node (e.g. --cpu-prof) when running from source. */
  nodeArgs: string[] = [],
): Promise<Proc & {url: string; internalUrl: string; loadMs: number}> {
  const dir = join(work, `tg-${versions}`)
  const registry = join(work, `registry-${versions}.json`)
  writeFileSync(registry, JSON.stringify(wrap(syntheticServers(versions), '2025-11-01T00:00:00Z')))
  const config = join(work, `serve-${versions}.yaml`)
  writeFileSync(
    config,
    [
      'sources:',
      `  - {name: bench, file: {path: ${JSON.stringify(registry)}}}`,
      'registries:',
      '  - {name: default, sources: [bench]}',
      `storage: {sqlite: {path: ${JSON.stringify(join(dir, 'registry.db'))}}}`,
      'auth: {mode: anonymous}',
    ].join('\n'),
  )
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_STATE_HOME: join(dir, 'state'),
  }
  const started = Date.now()
  const serveArgs = [
    'serve',
    '--config',
    config,
    '--address',
    '127.0.0.1:0',
    '--internal-address',
    '127.0.0.1:0',
    '--json',
  ]
  const proc = await start(
    binary ? serveArgs : [...nodeArgs, join(ROOT, 'bin', 'dev.js'), ...serveArgs],
    {
      env,
      timeoutMs: 180_000,
      command: binary,
    },
  )
  const url = String(proc.ready.url)
  const internalUrl = String(proc.ready.internalUrl)
  await waitFor200(`${internalUrl}/readiness`, 300_000)
  return {...proc, url, internalUrl, loadMs: Date.now() - started}
}
