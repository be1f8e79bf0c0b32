/**
 * Registry authorization (issue 17, "Performance"): `toolgate serve` in oauth mode (real
 * oidc-provider, one RS256 token, validation cache on) over 100,000 stored versions, without a
 * policy and with a 20-policy set under which the caller (group team-3) sees 10% of the servers,
 * side by side in one run, autocannon at 64 connections on loopback:
 *
 *   first page (limit=30) and the page at 90% depth of what the caller sees — the response cache
 *   holds finished pages per caller class, so these load cells measure cache hits;
 *   a walk over every page (limit=100), each page requested once: cache misses, and for the policy
 *   the first evaluation of every decision; the walk reports its mean page time, its first page
 *   and its page at 90% depth;
 *   a second walk with the policy: decisions cached, pages not (another page size).
 * Both servers run at once and the load cells alternate between them.
 *
 * Env: BENCH_SECONDS (default 4), BENCH_VERSIONS (default 100000).
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {syntheticServers, wrap} from '../scripts/registry-data/generate.ts'
import {startOidcProvider} from '../test/helpers/oidc-provider.ts'
import {load, type LoadResult} from './helpers/load.ts'
import {peakRssMb, ROOT, start, waitFor200, type Proc} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 100_000)
const CONNECTIONS = 64
const work = mkdtempSync(join(tmpdir(), 'toolgate-bench-authz-'))
const procs: Proc[] = []
const log = (msg: string) => process.stderr.write(`serve-authz.bench: ${msg}\n`)

// Ten teams, each owning the namespaces io.github.org-<d>xx (a tenth of the synthetic orgs), and
// ten policies of other shapes that the caller's requests must still be evaluated against.
const POLICIES = [
  ...Array.from(
    {length: 10},
    (_, d) =>
      `permit(principal in ToolgateGroup::"team-${d}", action, resource is Server) when { resource.namespace like "io.github.org-${d}*" };`,
  ),
  'permit(principal in ToolgateGroup::"admins", action, resource);',
  'forbid(principal, action, resource is Server) when { resource.status == "deleted" } unless { principal in ToolgateGroup::"admins" };',
  'permit(principal in ToolgateGroup::"auditors", action == Action::"list_servers", resource);',
  'permit(principal in ToolgateGroup::"npm-users", action, resource is Server) when { resource.packageTypes.contains("npm") };',
  'permit(principal in ToolgateGroup::"remote-users", action, resource is Server) when { resource.remote };',
  'permit(principal in ToolgateGroup::"public", action, resource in Registry::"public");',
  'forbid(principal in ToolgateGroup::"contractors", action, resource is Server) when { resource.namespace like "io.github.org-9*" };',
  'permit(principal in ToolgateGroup::"latest-only", action, resource is Server) when { resource.isLatest };',
  'permit(principal in ToolgateGroup::"weather", action, resource is Server) when { resource.name like "*weather*" };',
  'forbid(principal, action, resource is Server) when { resource.meta has "internal" && resource.meta.internal == true } unless { principal in ToolgateGroup::"admins" };',
]

interface Walk {
  total: number
  pages: number
  meanMs: number
  firstMs: number
  deepMs: number
  deepCursor: string
}

async function walk(
  listUrl: string,
  limit: number,
  headers: Record<string, string>,
): Promise<Walk> {
  const times: number[] = []
  const seenAt: {seen: number; cursor: string; ms: number}[] = []
  let seen = 0
  let cursor: string | undefined
  for (let guard = 0; guard < 100_000; guard++) {
    const url = `${listUrl}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    const t0 = performance.now()
    const res = await fetch(url, {headers})
    const body = (await res.json()) as {servers: unknown[]; metadata: {nextCursor?: string}}
    times.push(performance.now() - t0)
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`)
    seen += body.servers.length
    cursor = body.metadata.nextCursor
    if (!cursor) break
    seenAt.push({seen, cursor, ms: 0})
  }
  const deepIndex = seenAt.findIndex((b) => b.seen >= seen * 0.9)
  if (deepIndex < 0) throw new Error('a single page')
  return {
    total: seen,
    pages: times.length,
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    firstMs: times[0] ?? 0,
    // The page requested with the cursor at 90% is the one after that boundary.
    deepMs: times[deepIndex + 1] ?? 0,
    deepCursor: seenAt[deepIndex]!.cursor,
  }
}

async function startServe(name: string, authz: string[]): Promise<Proc & {url: string}> {
  const dir = join(work, name)
  const config = join(work, `${name}.yaml`)
  writeFileSync(config, [...baseConfig(dir), ...authz].join('\n'))
  const proc = await start(
    [
      join(ROOT, 'bin', 'dev.js'),
      'serve',
      '--config',
      config,
      '--address',
      '127.0.0.1:0',
      '--internal-address',
      '127.0.0.1:0',
      '--json',
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        XDG_DATA_HOME: join(dir, 'data'),
        XDG_STATE_HOME: join(dir, 'state'),
      },
      timeoutMs: 300_000,
    },
  )
  procs.push(proc)
  await waitFor200(`${String(proc.ready.internalUrl)}/readiness`, 300_000)
  return {...proc, url: String(proc.ready.url)}
}

let issuer = ''
const registryFile = join(work, 'registry.json')
const baseConfig = (dir: string) => [
  'sources:',
  `  - {name: bench, file: {path: ${JSON.stringify(registryFile)}}}`,
  'registries:',
  '  - {name: default, sources: [bench]}',
  `storage: {sqlite: {path: ${JSON.stringify(join(dir, 'registry.db'))}}}`,
  'auth:',
  '  oauth:',
  '    resourceUrl: https://registry.example.test',
  `    providers: [{name: op, issuerUrl: ${JSON.stringify(issuer)}, audience: api://registry, allowPrivateIP: true}]`,
]

interface Run {
  label: string
  first: LoadResult[]
  deep: LoadResult[]
  cold: Walk
  warm?: Walk
  rssMb: number
}

interface Server {
  label: string
  serve: Proc & {url: string}
  listUrl: string
  run: Run
}

async function prepare(
  label: string,
  authz: string[],
  headers: Record<string, string>,
): Promise<Server> {
  log(`${label}: starting over ${VERSIONS} versions`)
  const serve = await startServe(label.replace(/\W+/g, '-'), authz)
  const listUrl = `${serve.url}/registry/default/v0.1/servers`
  const cold = await walk(listUrl, 100, headers)
  log(`${label}: cold walk ${cold.pages} pages, ${cold.total} entries`)
  const warm = authz.length > 0 ? await walk(listUrl, 99, headers) : undefined
  return {
    label,
    serve,
    listUrl,
    run: {label, first: [], deep: [], cold, ...(warm ? {warm} : {}), rssMb: 0},
  }
}

// Both servers run at once and their cells alternate (A, B, A, B), so a burst of other work on
// the machine colours both sides alike; each figure is the mean of ROUNDS cells.
const ROUNDS = 2

async function loadCells(servers: Server[], headers: Record<string, string>): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of ['first', 'deep'] as const) {
      for (const s of servers) {
        const url =
          kind === 'first'
            ? `${s.listUrl}?limit=30`
            : `${s.listUrl}?limit=30&cursor=${encodeURIComponent(s.run.cold.deepCursor)}`
        const r = await load(url, {connections: CONNECTIONS, seconds: SECONDS, headers})
        if (r.non2xx + r.errors > 0)
          log(`WARNING ${s.label}: ${r.non2xx} non-2xx, ${r.errors} errors`)
        s.run[kind].push(r)
      }
    }
  }
  for (const s of servers) s.run.rssMb = peakRssMb(s.serve.child.pid as number)
}

function mean(cells: LoadResult[], key: 'rps' | 'p50' | 'p99' | 'mean'): number {
  return cells.reduce((a, c) => a + c[key], 0) / cells.length
}

async function main(): Promise<void> {
  const op = await startOidcProvider({audience: 'api://registry'})
  issuer = op.issuer
  try {
    writeFileSync(
      registryFile,
      JSON.stringify(wrap(syntheticServers(VERSIONS), '2025-11-01T00:00:00Z')),
    )
    writeFileSync(
      join(work, 'policy.json'),
      JSON.stringify({version: '1.0', type: 'cedarv1', cedar: {policies: POLICIES}}),
    )
    const token = await op.issueAccessToken({sub: 'carol', claims: {groups: ['team-3']}})
    const headers = {authorization: `Bearer ${token}`}
    const servers = [
      await prepare('no policy', [], headers),
      await prepare(
        '20 policies, caller sees 10%',
        [`  authz: {policyFile: ${JSON.stringify(join(work, 'policy.json'))}}`],
        headers,
      ),
    ]
    await loadCells(servers, headers)
    const [plain, policy] = servers.map((s) => s.run) as [Run, Run]
    const rows: (string | number)[][] = []
    for (const r of [plain, policy]) {
      for (const [kind, cells] of [
        ['first page', r.first],
        ['page @90%', r.deep],
      ] as const)
        rows.push([
          `${r.label}: ${kind} (limit=30)`,
          fmt(mean(cells, 'rps'), 0),
          fmt(mean(cells, 'p50'), 1),
          fmt(mean(cells, 'p99'), 1),
          fmt(mean(cells, 'mean'), 2),
        ])
    }
    process.stdout.write(
      `\n## serve-authz: registry authorization, oauth mode, ${VERSIONS} versions, ${CONNECTIONS} connections, ${SECONDS}s per cell, mean of ${ROUNDS} alternating rounds (${new Date().toISOString()})\n\n`,
    )
    process.stdout.write(table(['scenario', 'req/s', 'p50 ms', 'p99 ms', 'mean ms'], rows) + '\n\n')
    const walkRow = (label: string, w: Walk) => [
      label,
      String(w.total),
      String(w.pages),
      fmt(w.meanMs, 2),
      fmt(w.firstMs, 2),
      fmt(w.deepMs, 2),
    ]
    const walks = [
      walkRow(`${plain.label}: uncached walk`, plain.cold),
      walkRow(`${policy.label}: uncached walk, first decisions`, policy.cold),
    ]
    if (policy.warm)
      walks.push(walkRow(`${policy.label}: uncached walk, decisions cached`, policy.warm))
    process.stdout.write(
      table(
        [
          'walk (one connection, limit 100/99)',
          'entries',
          'pages',
          'mean ms/page',
          'first page ms',
          'page @90% ms',
        ],
        walks,
      ) + '\n\n',
    )
    process.stdout.write(
      table(
        ['server', 'peak RSS (VmHWM)'],
        [plain, policy].map((r) => [r.label, `${fmt(r.rssMb, 0)} MB`]),
      ) + '\n\n',
    )

    const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL')
    const share = mean(policy.first, 'rps') / mean(plain.first, 'rps')
    const depth = mean(policy.deep, 'mean') / mean(policy.first, 'mean')
    const coldDepth = policy.cold.deepMs / policy.cold.firstMs
    const targets = [
      [
        'filtered first page ≥ 50% of unfiltered req/s',
        `${fmt(100 * share, 0)}%`,
        '≥ 50%',
        verdict(share >= 0.5),
      ],
      [
        'filtered page @90% ≤ 2× first page (mean latency, cached)',
        `${fmt(depth, 2)}×`,
        '≤ 2×',
        verdict(depth <= 2),
      ],
      [
        'filtered page @90% ≤ 2× first page (uncached walk)',
        `${fmt(coldDepth, 2)}×`,
        '≤ 2×',
        verdict(coldDepth <= 2),
      ],
    ]
    process.stdout.write(table(['target', 'measured', 'target', 'result'], targets) + '\n')
    process.stdout.write(
      '\nNote: the load generator, the server under test and the OpenID provider share this machine; figures are indicative.\n',
    )
  } finally {
    await op.close()
  }
}

try {
  await main()
} finally {
  for (const p of procs) await p.stop()
  rmSync(work, {recursive: true, force: true})
}
