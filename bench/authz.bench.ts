/**
 * Cedar authorization benchmark (issue 5). Decision latency with 1, 50 and 500 policies —
 * uncached (cache off) and cached — next to the baseline of evaluating policy text per call
 * (`isAuthorized`, no preparsing, the whole token and arguments sent), and the time to filter a
 * 1,000-tool `tools/list`. In-process, no network, bounded iteration counts.
 *
 *   node_modules/.bin/node bench/authz.bench.ts
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs'
import {Authorizer} from '../src/lib/authz/authorizer.ts'
import {filterListResult} from '../src/lib/authz/list-filter.ts'
import {validateAuthzConfig} from '../src/lib/authz/policy-file.ts'
import {ARGS, CLAIMS, policies} from './helpers/cedar-fixture.ts'

function percentiles(samples: number[]): {p50: number; p99: number} {
  const s = [...samples].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] as number
  return {p50: at(0.5), p99: at(0.99)}
}

function time(iterations: number, fn: (i: number) => void): {p50: number; p99: number} {
  for (let i = 0; i < Math.min(200, iterations); i++) fn(i) // warm-up
  const samples: number[] = []
  for (let i = 0; i < iterations; i++) {
    const t = process.hrtime.bigint()
    fn(i)
    samples.push(Number(process.hrtime.bigint() - t) / 1000)
  }
  return percentiles(samples)
}

const us = (v: number) => `${v.toFixed(1)} µs`
const rows: string[][] = []

for (const n of [1, 50, 500]) {
  const texts = policies(n)
  const config = validateAuthzConfig({version: '1.0', type: 'cedarv1', cedar: {policies: texts}})
  const tool = n === 1 ? 'tool0' : `tool${Math.floor(n / 2) + 1}`
  const spec = {
    action: 'call_tool' as const,
    id: tool,
    args: ARGS,
    annotations: {readOnlyHint: true, destructiveHint: false},
  }

  // Baseline: policy text parsed on every call, every claim and argument sent.
  const staticPolicies = Object.fromEntries(texts.map((t, i) => [`policy${i}`, t]))
  const claimAttrs = Object.fromEntries(Object.entries(CLAIMS).map(([k, v]) => [`claim_${k}`, v]))
  const argAttrs = {
    arg_message: 'hello',
    arg_count: 3,
    arg_dry_run: false,
    arg_options_present: true,
  }
  const baseline = time(n >= 500 ? 200 : 2000, () => {
    cedar.isAuthorized({
      principal: {type: 'Client', id: 'alice'},
      action: {type: 'Action', id: 'call_tool'},
      resource: {type: 'Tool', id: tool},
      context: {...claimAttrs, ...argAttrs},
      policies: {staticPolicies},
      entities: [
        {
          uid: {type: 'Client', id: 'alice'},
          attrs: claimAttrs,
          parents: CLAIMS.groups.map((g) => ({type: 'ToolgateGroup', id: g})),
        },
        {
          uid: {type: 'Tool', id: tool},
          attrs: {...argAttrs, name: tool, readOnlyHint: true, destructiveHint: false},
          parents: [],
        },
      ],
    })
  })

  const uncachedAuthz = new Authorizer(config, {cacheSize: 0})
  const uncached = time(5000, () =>
    uncachedAuthz.decide(uncachedAuthz.principal('alice', CLAIMS), spec, false),
  )
  const cachedAuthz = new Authorizer(config)
  const cached = time(20000, () =>
    cachedAuthz.decide(cachedAuthz.principal('alice', CLAIMS), spec, false),
  )
  if (!uncachedAuthz.decide(uncachedAuthz.principal('alice', CLAIMS), spec, false).allowed)
    throw new Error('bench request should be allowed')
  rows.push([
    `${n}`,
    `${us(baseline.p50)} / ${us(baseline.p99)}`,
    `${us(uncached.p50)} / ${us(uncached.p99)}`,
    `${us(cached.p50)} / ${us(cached.p99)}`,
    n === 50 ? 'uncached p50 ≤ 50 µs; cached p50 ≤ 5 µs' : 'cached p50 ≤ 5 µs',
  ])
}

console.log('\nCedar decision latency, p50 / p99 (one call_tool request, realistic token)')
const header = [
  'policies',
  'baseline: isAuthorized(text)',
  'toolgate uncached',
  'toolgate cached',
  'target',
]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)))
const line = (r: string[]) =>
  '| ' + r.map((c, i) => c.padEnd(widths[i] as number)).join(' | ') + ' |'
console.log(line(header))
console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|')
for (const r of rows) console.log(line(r))

// Filtering a 1,000-tool tools/list with 50 policies (one permit per group of tools plus the
// annotation rule, so every tool needs a real evaluation).
const tools = Array.from({length: 1000}, (_, i) => ({
  name: `tool${i}`,
  description: `Tool number ${i}`,
  inputSchema: {type: 'object', properties: {message: {type: 'string'}}},
  annotations: {readOnlyHint: i % 2 === 0, destructiveHint: i % 7 === 0},
}))
const listConfig = validateAuthzConfig({
  version: '1.0',
  type: 'cedarv1',
  cedar: {policies: policies(50)},
})
const filterRuns: number[] = []
const cachedRuns: number[] = []
let kept = 0
for (let run = 0; run < 7; run++) {
  const authz = new Authorizer(listConfig)
  const principal = authz.principal('alice', CLAIMS)
  let t = performance.now()
  kept = filterListResult(authz, principal, 'tools', {tools, nextCursor: 'c'}).kept
  filterRuns.push(performance.now() - t)
  t = performance.now()
  filterListResult(authz, authz.principal('alice', CLAIMS), 'tools', {tools, nextCursor: 'c'})
  cachedRuns.push(performance.now() - t)
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] as number
console.log('\nFiltering a 1,000-tool tools/list (50 policies), median of 7 runs')
console.log(`| case                       | time      | target   |`)
console.log(`|----------------------------|-----------|----------|`)
console.log(
  `| first list (cache empty)   | ${med(filterRuns).toFixed(1).padStart(6)} ms | ≤ 30 ms  |`,
)
console.log(
  `| repeated list (cache warm) | ${med(cachedRuns).toFixed(1).padStart(6)} ms | -        |`,
)
console.log(`(${kept} of 1000 tools kept)`)
console.log('\nFigures are noisy on a shared machine; compare columns, not absolute values.')
