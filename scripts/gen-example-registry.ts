/**
 * Regenerates examples/registry.json (deterministic), or writes a synthetic registry of N versions:
 *   node scripts/gen-example-registry.ts                      # examples/registry.json
 *   node scripts/gen-example-registry.ts --versions 100000 --out /tmp/big.json
 */
import {writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {exampleServers, syntheticServers, wrap} from './registry-data/generate.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const {values} = parseArgs({options: {versions: {type: 'string'}, out: {type: 'string'}}})

if (values.versions !== undefined) {
  const n = Number(values.versions)
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--versions: "${values.versions}" is not a positive integer`)
  const out = values.out ?? join(root, '.tmp', `registry-${n}.json`)
  writeFileSync(out, JSON.stringify(wrap(syntheticServers(n), '2025-11-01T00:00:00Z')))
  process.stdout.write(`${out}: ${n} versions\n`)
} else {
  const servers = exampleServers()
  const out = values.out ?? join(root, 'examples', 'registry.json')
  writeFileSync(out, JSON.stringify(wrap(servers, '2025-11-01T00:00:00Z'), null, 2) + '\n')
  const names = new Set(servers.map((s) => s.name))
  process.stdout.write(`${out}: ${names.size} servers, ${servers.length} versions\n`)
}
