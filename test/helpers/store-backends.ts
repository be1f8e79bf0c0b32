/**
 * The registry store backends the shared store tests run against: one set of test cases, each
 * run on SQLite (`:memory:`) and on PostgreSQL (a fresh database of a throwaway cluster, see
 * postgres.ts). Call `stopStoreBackends` in a top-level `after` of every file that uses them.
 */
import {describe} from 'node:test'
import {PostgresRegistryStore} from '../../src/lib/registry/postgres-store.ts'
import {SqliteRegistryStore} from '../../src/lib/registry/sqlite-store.ts'
import type {ListQuery, RegistryDefinition, RegistryStore} from '../../src/lib/registry/types.ts'
import {postgresMissing, startPgCluster, type PgCluster} from './postgres.ts'

/** What `serve` uses of a store, on both backends. */
export type TestStore = RegistryStore & {
  listServersText(
    registry: string,
    query: ListQuery,
  ): Promise<{servers: string[]; nextCursor?: string}>
  listVersionsText(registry: string, name: string): Promise<string[] | undefined>
  getVersionText(registry: string, name: string, version: string): Promise<string | undefined>
  scanServers(
    registry: string,
    query: ListQuery,
  ): Promise<{rows: {name: string; version: string; entry(): string | undefined}[]; more: boolean}>
  dataVersion(): number
  countRegistryVersions(registry: string): number | Promise<number>
}

export interface StoreBackend {
  name: 'sqlite' | 'postgres'
  skip: string | false
  /** A new, empty store with `registries` declared. */
  open(registries?: RegistryDefinition[]): Promise<TestStore>
}

let cluster: Promise<PgCluster> | undefined

/** The cluster of this test process, started on first use. */
export function pgCluster(): Promise<PgCluster> {
  cluster ??= startPgCluster()
  return cluster
}

/** A new empty database's URL on this process's cluster. */
export async function pgDatabase(): Promise<string> {
  return (await pgCluster()).createDatabase()
}

// PostgreSQL stores opened through STORE_BACKENDS, closed by stopStoreBackends: a test that fails
// before its own close() would otherwise leave a pool open, and the file would wait for it until
// its test timeout instead of reporting the failure. close() may run twice.
const openPostgresStores = new Set<PostgresRegistryStore>()

export async function stopStoreBackends(): Promise<void> {
  await Promise.all([...openPostgresStores].map((s) => s.close()))
  openPostgresStores.clear()
  const c = cluster
  cluster = undefined
  if (c) await (await c).destroy()
}

const DEFAULT_REGISTRIES = [{name: 'default', sources: ['a']}]

export const STORE_BACKENDS: StoreBackend[] = [
  {
    name: 'sqlite',
    skip: false,
    async open(registries = DEFAULT_REGISTRIES) {
      const store = new SqliteRegistryStore({path: ':memory:'})
      await store.init()
      await store.setRegistries(registries)
      return store
    },
  },
  {
    name: 'postgres',
    skip: postgresMissing,
    async open(registries = DEFAULT_REGISTRIES) {
      const store = new PostgresRegistryStore({connection: {url: await pgDatabase()}, pollMs: 200})
      openPostgresStores.add(store)
      await store.init()
      await store.setRegistries(registries)
      return store
    },
  },
]

/** `describe(title)` once per backend, named after it, skipped only where the backend is absent. */
export function describeEachBackend(title: string, body: (backend: StoreBackend) => void): void {
  for (const backend of STORE_BACKENDS) {
    describe(`${title} [${backend.name}]`, {skip: backend.skip}, () => body(backend))
  }
}
