/**
 * The authorization policy file (spec "Authorization policy file"; contract §6), JSON or YAML:
 *   {"version":"1.0","type":"cedarv1","cedar":{"policies":[…],"entities_json":"[]",
 *    "group_claim_name":"","role_claim_name":""}}
 * Validation is strict and happens at startup: every error names the field path, and a policy that
 * does not parse is reported with its index and the Cedar parser's message.
 */
import {readFile} from 'node:fs/promises'
import {parse as parseYaml} from 'yaml'
import {ToolgateError} from '../errors.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import {checkPolicy, type CedarEntity} from './cedar-engine.ts'
import {EntitiesJsonError, parseEntitiesJson} from './entities-json.ts'

export const SUPPORTED_VERSIONS = ['1.0', '1'] as const

export interface AuthzConfig {
  version: string
  type: 'cedarv1'
  /** Policy statements keyed by id (`policy0`, `policy1`, … in file order) for decision logs. */
  policies: Record<string, string>
  entities: CedarEntity[]
  /** Empty string: default claim resolution. */
  groupClaimName: string
  roleClaimName: string
}

function invalid(path: string, message: string): ToolgateError {
  return new ToolgateError('ERR_POLICY_INVALID', `${path}: ${message}`, {details: {path}})
}

function optionalString(obj: Record<string, unknown>, key: string, path: string): string {
  const v = obj[key]
  if (v === undefined || v === null) return ''
  if (typeof v !== 'string') throw invalid(`${path}.${key}`, 'must be a string')
  return v
}

/** Validates an already-parsed policy file value. */
export function validateAuthzConfig(value: unknown): AuthzConfig {
  if (!isRecord(value)) throw invalid('(root)', 'must be an object with version, type and cedar')
  for (const key of Object.keys(value)) {
    if (!['version', 'type', 'cedar'].includes(key)) throw invalid(key, 'unknown field')
  }
  const version = value.version
  if (typeof version !== 'string')
    throw invalid('version', 'is required and must be a string (for example "1.0")')
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
    throw invalid(
      'version',
      `unsupported version "${version}" (supported: ${SUPPORTED_VERSIONS.join(', ')})`,
    )
  }
  if (value.type === undefined) throw invalid('type', 'is required (cedarv1)')
  if (value.type !== 'cedarv1')
    throw invalid('type', `unknown policy type ${JSON.stringify(value.type)} (supported: cedarv1)`)
  const c = value.cedar
  if (!isRecord(c)) throw invalid('cedar', 'is required and must be an object')
  for (const key of Object.keys(c)) {
    if (!['policies', 'entities_json', 'group_claim_name', 'role_claim_name'].includes(key)) {
      throw invalid(`cedar.${key}`, 'unknown field')
    }
  }
  if (!Array.isArray(c.policies))
    throw invalid('cedar.policies', 'is required and must be an array of policy strings')
  if (c.policies.length === 0) throw invalid('cedar.policies', 'must hold at least one policy')
  const policies: Record<string, string> = {}
  c.policies.forEach((text, i) => {
    const path = `cedar.policies[${i}]`
    if (typeof text !== 'string' || text.trim() === '')
      throw invalid(path, 'must be a non-empty policy string')
    const id = `policy${i}`
    const problem = checkPolicy(id, text)
    if (problem !== undefined) throw invalid(path, `policy ${i} does not parse: ${problem}`)
    policies[id] = text
  })
  const entitiesText = c.entities_json ?? '[]'
  if (typeof entitiesText !== 'string') {
    throw invalid(
      'cedar.entities_json',
      'must be a string holding a JSON array (use "[]" when unused)',
    )
  }
  let entities: CedarEntity[]
  try {
    entities = parseEntitiesJson(entitiesText)
  } catch (err) {
    if (err instanceof EntitiesJsonError)
      throw invalid(err.path, err.message.slice(err.path.length + 2))
    throw err
  }
  return {
    version,
    type: 'cedarv1',
    policies,
    entities,
    groupClaimName: optionalString(c, 'group_claim_name', 'cedar'),
    roleClaimName: optionalString(c, 'role_claim_name', 'cedar'),
  }
}

/** Parses policy file text; `.json` files as JSON, anything else as YAML (a superset of JSON). */
export function parseAuthzConfigText(text: string, fileName = 'policy file'): AuthzConfig {
  let value: unknown
  try {
    value = fileName.toLowerCase().endsWith('.json') ? JSON.parse(text) : parseYaml(text)
  } catch (err) {
    throw new ToolgateError(
      'ERR_POLICY_INVALID',
      `${fileName}: cannot be parsed: ${(err as Error).message}`,
      {
        cause: err,
      },
    )
  }
  try {
    return validateAuthzConfig(value)
  } catch (err) {
    if (err instanceof ToolgateError) {
      throw new ToolgateError(err.code, `${fileName}: ${err.message}`, {details: err.details})
    }
    throw err
  }
}

/** Reads and validates the file given to `--authz-config`. */
export async function loadAuthzConfigFile(path: string): Promise<AuthzConfig> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    const code =
      (err as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'ERR_CONFIG_NOT_FOUND'
        : 'ERR_FILE_UNREADABLE'
    throw new ToolgateError(code, `authorization policy file ${path} cannot be read`, {cause: err})
  }
  return parseAuthzConfigText(text, path)
}
