import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {test} from 'node:test'
import {fileURLToPath} from 'node:url'
import {exampleServers, wrap} from '../../scripts/registry-data/generate.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const file = join(root, 'examples', 'registry.json')
interface Pkg {
  registryType: string
  transport: {type: string; url?: string}
  environmentVariables?: {isSecret: boolean}[]
  packageArguments?: unknown[]
  runtimeArguments?: unknown[]
}
interface Server {
  name: string
  version: string
  description: string
  title?: string
  websiteUrl?: string
  repository?: {url: string}
  packages?: Pkg[]
  remotes?: {type: string; url: string; headers: unknown[]}[]
  _meta: Record<string, {releasedAt: string} | undefined>
}
const doc = JSON.parse(readFileSync(file, 'utf8')) as {
  version: string
  meta: {last_updated: string}
  data: {servers: Server[]}
}
const servers = doc.data.servers

// contract §1 name rules
const NAMESPACE = /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/
const NAME = /^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$/
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/

test('examples/registry.json is exactly what the generator produces (regenerate with scripts/gen-example-registry.ts)', () => {
  assert.deepEqual(doc, JSON.parse(JSON.stringify(wrap(exampleServers(), '2025-11-01T00:00:00Z'))))
})

test('uses the upstream wrapper format', () => {
  assert.equal(typeof doc.version, 'string')
  assert.ok(!Number.isNaN(Date.parse(doc.meta.last_updated)))
  assert.ok(Array.isArray(servers))
})

test('holds at least 60 servers with several semver versions each, published at different dates', () => {
  const byName = new Map<string, Server[]>()
  for (const s of servers) byName.set(s.name, [...(byName.get(s.name) ?? []), s])
  assert.ok(byName.size >= 60, `${byName.size} servers`)
  for (const [name, versions] of byName) {
    assert.ok(versions.length >= 2, `${name} has ${versions.length} version(s)`)
    assert.equal(
      new Set(versions.map((v) => v.version)).size,
      versions.length,
      `${name}: duplicate version`,
    )
    for (const v of versions) assert.match(v.version, SEMVER, name)
    const dates = versions.map(
      (v) => v._meta['io.modelcontextprotocol.registry/publisher-provided']?.releasedAt,
    )
    assert.equal(new Set(dates).size, dates.length, `${name}: versions share a release date`)
  }
})

test('every server name satisfies the contract name rules', () => {
  for (const {name} of servers) {
    const parts = name.split('/')
    assert.equal(parts.length, 2, name)
    assert.ok(name.length >= 3 && name.length <= 200, name)
    assert.match(parts[0] as string, NAMESPACE, name)
    assert.match(parts[1] as string, NAME, name)
  }
})

test('covers every package registry type with every transport, and both remote types with headers', () => {
  const combos = new Set<string>()
  const remotes = new Set<string>()
  for (const s of servers) {
    assert.ok(s.description.length > 0 && s.description.length <= 100, s.name)
    assert.ok(s.title && s.websiteUrl && s.repository?.url, s.name)
    for (const p of s.packages ?? []) {
      combos.add(`${p.registryType}/${p.transport.type}`)
      if (p.transport.type !== 'stdio')
        assert.match(p.transport.url ?? '', /^http:\/\/localhost:\{port\}\//)
    }
    for (const r of s.remotes ?? []) {
      assert.ok(r.headers.length > 0, `${s.name} remote without headers`)
      remotes.add(r.type)
    }
  }
  for (const type of ['npm', 'pypi', 'oci', 'nuget']) {
    for (const transport of ['stdio', 'streamable-http', 'sse'])
      assert.ok(combos.has(`${type}/${transport}`), `${type}/${transport}`)
  }
  assert.ok(combos.has('mcpb/stdio'))
  assert.deepEqual([...remotes].sort(), ['sse', 'streamable-http'])
  const env = servers.flatMap((s) =>
    (s.packages ?? []).flatMap((p) => p.environmentVariables ?? []),
  )
  assert.ok(env.some((e) => e.isSecret === true) && env.some((e) => e.isSecret === false))
  assert.ok(
    servers.some((s) => (s.packages ?? []).some((p) => (p.packageArguments?.length ?? 0) > 0)),
  )
  assert.ok(
    servers.some((s) => (s.packages ?? []).some((p) => (p.runtimeArguments?.length ?? 0) > 0)),
  )
})
