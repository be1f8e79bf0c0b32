/**
 * `toolgate authz lint`: what can go wrong with a policy file before it meets a request.
 *
 * - invalid: the file does not load (the same validation as `--authz-config`).
 * - never-applies: Cedar's validator, on the policy scopes against the model's schema
 *   (lint-schema.ts): an unknown entity type or action, or an action/resource pair that no request
 *   has (`action == Action::"call_tool", resource is Prompt`).
 * - unguarded-attribute: an optional attribute read without a `has` guard before it; when the
 *   attribute is absent Cedar raises an error and toolgate denies (contract §6).
 * - unknown-attribute: an attribute the model never sets (`resource.readOnly`), always absent.
 * - shadowed-permit: a `forbid` without conditions whose scope covers the permit: it always wins.
 * - claim-typo: a `claim_*` name not in a sample of real claims (`--claims`), with the likely name.
 */
import {isToolgateError} from '../errors.ts'
import {policyToJson, validatePolicies, type CedarPolicyJson} from './cedar-engine.ts'
import {ANNOTATION_NAMES} from './entity-model.ts'
import {loadAuthzConfigFile, type AuthzConfig} from './policy-file.ts'
import {schemaText, type LintModel} from './lint-schema.ts'

export type FindingKind =
  | 'invalid'
  | 'never-applies'
  | 'unguarded-attribute'
  | 'unknown-attribute'
  | 'shadowed-permit'
  | 'claim-typo'
  | 'unknown-backend'

export interface Finding {
  kind: FindingKind
  severity: 'error' | 'warning'
  /** `policy<N>` (N: index in cedar.policies); null for the file as a whole. */
  policy: string | null
  message: string
}

export interface LintResult {
  file: string
  model: LintModel | null
  policies: number
  findings: Finding[]
}

export interface LintOptions {
  model?: LintModel | 'auto'
  /** A sample of real token claims, to catch misspelt `claim_*` names. */
  sampleClaims?: Record<string, unknown> | undefined
  /** The backend names of a gateway (issue 37): `resource.backend` is then set, and checked. */
  gatewayBackends?: string[] | undefined
}

export async function lintFile(file: string, options: LintOptions = {}): Promise<LintResult> {
  let config: AuthzConfig
  try {
    config = await loadAuthzConfigFile(file)
  } catch (err) {
    if (isToolgateError(err, 'ERR_POLICY_INVALID')) {
      const policy = /cedar\.policies\[(\d+)\]/.exec(err.message)?.[1]
      return {
        file,
        model: null,
        policies: 0,
        findings: [
          {
            kind: 'invalid',
            severity: 'error',
            policy: policy === undefined ? null : `policy${policy}`,
            message: err.message,
          },
        ],
      }
    }
    throw err
  }
  return {file, ...lintConfig(config, options)}
}

type Expr = Record<string, unknown>
type Scope = {
  op: string
  entity?: unknown
  entities?: unknown[]
  entity_type?: string
  in?: unknown
}
interface Ast {
  effect: 'permit' | 'forbid'
  principal: Scope
  action: Scope
  resource: Scope
  conditions: {kind: 'when' | 'unless'; body: Expr}[]
}

export function lintConfig(
  config: AuthzConfig,
  options: LintOptions = {},
): Omit<LintResult, 'file'> {
  const ids = Object.keys(config.policies)
  const asts = ids.map((id) => policyToJson(config.policies[id] as string) as unknown as Ast)
  const model = options.model && options.model !== 'auto' ? options.model : detectModel(asts)
  const findings: Finding[] = []
  const add = (f: Finding) => findings.push(f)

  // Scopes only: the schema cannot type open-ended claims and arguments; conditions are checked below.
  const scopes = Object.fromEntries(
    ids.map((id, i) => [id, {...(asts[i] as Ast), conditions: []} as unknown as CedarPolicyJson]),
  )
  for (const p of validatePolicies(schemaText(model, config.entities), scopes))
    add({
      kind: 'never-applies',
      severity: 'error',
      policy: p.policyId || null,
      message: p.message.replace(/^for policy `[^`]*`, /, ''),
    })

  const entityAttrs = new Map<string, Set<string>>()
  for (const e of config.entities) {
    const type = (e.uid as {type: string}).type
    const set = entityAttrs.get(type) ?? new Set<string>()
    for (const k of Object.keys(e.attrs ?? {})) set.add(k)
    entityAttrs.set(type, set)
  }
  asts.forEach((ast, i) => {
    const id = ids[i] as string
    for (const read of attributeReads(ast)) {
      const where = `${read.path}.${read.attr}`
      const known =
        options.gatewayBackends &&
        model === 'proxy' &&
        read.root === 'resource' &&
        read.attr === 'backend' &&
        read.depth === 0
          ? 'always'
          : knownAttribute(model, read, entityAttrs)
      if (known === 'unknown') {
        const hint =
          read.root === 'resource' && read.attr === 'backend'
            ? ' (a gateway sets it: lint with --gateway-config or --backend)'
            : ''
        add({
          kind: 'unknown-attribute',
          severity: 'warning',
          policy: id,
          message: `${where}: the ${model} model never sets this attribute, so it is always absent${hint}`,
        })
        continue
      }
      if (known === 'optional' && !read.guarded)
        add({
          kind: 'unguarded-attribute',
          severity: 'warning',
          policy: id,
          message: `${where} is read without a has guard: when it is absent the policy errors and the request is denied (write: ${read.path} has ${read.attr} && …)`,
        })
      if (
        options.sampleClaims &&
        read.root !== 'resource' &&
        read.depth === 0 &&
        read.attr.startsWith('claim_')
      ) {
        const claim = read.attr.slice(6)
        if (!Object.hasOwn(options.sampleClaims, claim)) {
          const near = closest(claim, Object.keys(options.sampleClaims))
          add({
            kind: 'claim-typo',
            severity: 'warning',
            policy: id,
            message: `${where}: the sample claims have no "${claim}"${near ? `; did you mean claim_${near}?` : ''}`,
          })
        }
      }
    }
  })

  const backends = options.gatewayBackends
  if (backends)
    asts.forEach((ast, i) => {
      for (const name of comparedBackends(ast))
        if (!backends.includes(name)) {
          const near = closest(name, backends)
          add({
            kind: 'unknown-backend',
            severity: 'warning',
            policy: ids[i] as string,
            message: `resource.backend == ${JSON.stringify(name)}: the gateway has no such backend (${backends.join(', ')})${near ? `; did you mean ${JSON.stringify(near)}?` : ''}`,
          })
        }
    })

  asts.forEach((permit, i) => {
    if (permit.effect !== 'permit') return
    const j = asts.findIndex(
      (f) => f.effect === 'forbid' && f.conditions.length === 0 && covers(f, permit),
    )
    if (j >= 0)
      add({
        kind: 'shadowed-permit',
        severity: 'warning',
        policy: ids[i] as string,
        message: `never allows anything: ${ids[j]} forbids everything it permits, and forbid always wins`,
      })
  })
  const index = (f: Finding) => (f.policy ? Number(f.policy.replace(/^policy/, '')) : -1)
  // By policy, in file order; within a policy, in the order of the checks above.
  const sorted = dedupe(findings).sort((a, b) => index(a) - index(b))
  return {model, policies: ids.length, findings: sorted}
}

function detectModel(asts: Ast[]): LintModel {
  const text = JSON.stringify(asts)
  return /"(Server|Registry)"|"(list_servers|get_server|publish|set_status)"/.test(text)
    ? 'registry'
    : 'proxy'
}

interface Read {
  root: 'principal' | 'resource' | 'context' | 'other'
  /** The expression read from, as text (`principal`, `principal.claim_act`). */
  path: string
  attr: string
  /** 0 for `principal.x`, 1 for `principal.x.y`. */
  depth: number
  guarded: boolean
}

/**
 * Every `e.attr` of a policy's conditions, and whether a `has` makes it safe: `e has attr` in the
 * left operand of an enclosing `&&`, the condition of an `if`, or an earlier `when` clause (Cedar
 * evaluates conditions left to right and stops at the first false).
 */
function attributeReads(ast: Ast): Read[] {
  const reads: Read[] = []
  const path = (e: unknown): {root: Read['root']; text: string; depth: number} | undefined => {
    const x = e as Expr
    if (typeof x?.Var === 'string') {
      const v = x.Var
      return {
        root: v === 'principal' || v === 'resource' || v === 'context' ? v : 'other',
        text: v,
        depth: 0,
      }
    }
    const dot = x?.['.'] as {left: unknown; attr: string} | undefined
    if (dot) {
      const inner = path(dot.left)
      return inner && {root: inner.root, text: `${inner.text}.${dot.attr}`, depth: inner.depth + 1}
    }
    return undefined
  }
  /** `has` facts a true value of `e` establishes. */
  const facts = (e: unknown): string[] => {
    const x = e as Expr
    const has = x?.has as {left: unknown; attr: string | string[]} | undefined
    if (has) {
      const p = path(has.left)
      if (!p) return []
      const attrs = Array.isArray(has.attr) ? has.attr : [has.attr]
      return attrs.map((_, k) => `${[p.text, ...attrs.slice(0, k)].join('.')}\0${attrs[k]}`)
    }
    const and = x?.['&&'] as {left: unknown; right: unknown} | undefined
    return and ? [...facts(and.left), ...facts(and.right)] : []
  }
  const walk = (e: unknown, guards: Set<string>): void => {
    if (Array.isArray(e)) return e.forEach((n) => walk(n, guards))
    if (typeof e !== 'object' || e === null) return
    const x = e as Expr
    for (const [key, value] of Object.entries(x)) {
      if (key === 'Value') continue
      if (key === '.') {
        const {left, attr} = value as {left: unknown; attr: string}
        const p = path(left)
        if (p)
          reads.push({
            root: p.root,
            path: p.text,
            attr,
            depth: p.depth,
            guarded: guards.has(`${p.text}\0${attr}`),
          })
        walk(left, guards)
      } else if (key === 'has') {
        walk((value as {left: unknown}).left, guards)
      } else if (key === '&&') {
        const {left, right} = value as {left: unknown; right: unknown}
        walk(left, guards)
        walk(right, new Set([...guards, ...facts(left)]))
      } else if (key === 'if-then-else') {
        const v = value as {if: unknown; then: unknown; else: unknown}
        walk(v.if, guards)
        walk(v.then, new Set([...guards, ...facts(v.if)]))
        walk(v.else, guards)
      } else walk(value, guards)
    }
  }
  let guards = new Set<string>()
  for (const c of ast.conditions) {
    walk(c.body, guards)
    if (c.kind === 'when') guards = new Set([...guards, ...facts(c.body)])
  }
  return reads
}

const REGISTRY_ALWAYS = [
  'namespace',
  'name',
  'version',
  'status',
  'isLatest',
  'registry',
  'remote',
  'packageTypes',
  'meta',
]

/** Whether the model sets `read`: always, sometimes (needs `has`), or never. */
function knownAttribute(
  model: LintModel,
  read: Read,
  entityAttrs: Map<string, Set<string>>,
): 'always' | 'optional' | 'unknown' {
  const {root, attr, depth} = read
  if (root === 'other') return 'always'
  if (depth > 0) return 'optional' // a field of a record claim or of meta: any record may lack it
  if (root === 'principal' || root === 'context') {
    if (attr.startsWith('claim_')) return 'optional'
    if (root === 'context' && model === 'proxy' && attr.startsWith('arg_')) return 'optional'
    if (root === 'principal' && entityAttrs.get('Client')?.has(attr)) return 'optional'
    return 'unknown'
  }
  if (model === 'registry')
    return REGISTRY_ALWAYS.includes(attr)
      ? 'always'
      : [...entityAttrs.values()].some((s) => s.has(attr))
        ? 'optional'
        : 'unknown'
  if (attr === 'name') return 'always'
  if (attr.startsWith('arg_') || (ANNOTATION_NAMES as readonly string[]).includes(attr))
    return 'optional'
  for (const t of ['Tool', 'Prompt', 'Resource'])
    if (entityAttrs.get(t)?.has(attr)) return 'optional'
  return 'unknown'
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
const uidType = (v: unknown) =>
  ((v as {__entity?: {type?: string}})?.__entity ?? (v as {type?: string}))?.type

/** Whether every request the permit's scope matches is also matched by the forbid's scope. */
function covers(forbid: Ast, permit: Ast): boolean {
  const part = (f: Scope, p: Scope, isAction: boolean): boolean => {
    if (f.op === 'All' || same(f, p)) return true
    if (isAction && f.op === 'in' && Array.isArray(f.entities) && p.op === '==')
      return f.entities.some((e) => same(e, p.entity))
    if (f.op === 'is' && f.in === undefined)
      return (
        (p.op === 'is' && p.entity_type === f.entity_type) ||
        (p.op === '==' && uidType(p.entity) === f.entity_type)
      )
    return false
  }
  return (
    part(forbid.principal, permit.principal, false) &&
    part(forbid.action, permit.action, true) &&
    part(forbid.resource, permit.resource, false)
  )
}

/** The sample claim within edit distance 2 (or equal ignoring case and separators), if any. */
function closest(name: string, candidates: string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_:.]/g, '')
  let best: {c: string; d: number} | undefined
  for (const c of candidates) {
    const d = norm(c) === norm(name) ? 0 : distance(name, c)
    if (d <= 2 && (!best || d < best.d)) best = {c, d}
  }
  return best?.c
}

function distance(a: string, b: string): number {
  const row = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j] as number
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
      prev = tmp
    }
  }
  return row[b.length] as number
}

function dedupe(findings: Finding[]): Finding[] {
  const seen = new Set<string>()
  return findings.filter((f) => {
    const key = `${f.kind}\0${f.policy}\0${f.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** String literals a policy compares `resource.backend` with (`==`, `!=`), anywhere in it. */
function comparedBackends(ast: Ast): string[] {
  const found: string[] = []
  const isBackend = (e: unknown) => {
    const dot = (e as {'.'?: {left?: {Var?: string}; attr?: string}})?.['.']
    return dot?.left?.Var === 'resource' && dot.attr === 'backend'
  }
  const literal = (e: unknown) => {
    const v = (e as {Value?: unknown})?.Value
    return typeof v === 'string' ? v : undefined
  }
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node)) {
      if ((key === '==' || key === '!=') && value && typeof value === 'object') {
        const {left, right} = value as {left?: unknown; right?: unknown}
        const name = isBackend(left) ? literal(right) : isBackend(right) ? literal(left) : undefined
        if (name !== undefined) found.push(name)
      }
      walk(value)
    }
  }
  walk(ast.conditions)
  return found
}
