import {Ajv, type ErrorObject, type ValidateFunction} from 'ajv'
import addFormatsModule from 'ajv-formats'
import {validateServerName} from '../registry/names.ts'
import {SERVER_SCHEMA} from './server-schema.ts'

/** One thing wrong with a published document: where (an RFC 6901 JSON pointer) and why. */
export interface SchemaProblem {
  pointer: string
  message: string
}

// ajv-formats is CommonJS whose default export TypeScript sees one level down.
const addFormats = ((addFormatsModule as unknown as {default?: unknown}).default ??
  addFormatsModule) as (ajv: Ajv, formats: string[]) => Ajv

let compiled: ValidateFunction | undefined

function validator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv({
      allErrors: true,
      strict: true,
      strictRequired: false,
      allowUnionTypes: true,
    })
    addFormats(ajv, ['uri'])
    compiled = ajv.compile(SERVER_SCHEMA)
  }
  return compiled
}

// At most this many problems are reported: enough to fix a document in one round.
const MAX_PROBLEMS = 20

/**
 * Problems of a server.json sent to publish, most specific first and without the noise of schema
 * combinators; empty when it may be published. Our own name rule (contract §1) applies on top of
 * the schema's, so whatever is published can also be addressed by every route.
 */
export function checkServerJson(doc: unknown): SchemaProblem[] {
  const validate = validator()
  const problems: SchemaProblem[] = []
  if (!validate(doc)) {
    for (const e of validate.errors ?? []) {
      const problem = describe(e)
      if (problem && !problems.some((p) => p.pointer === problem.pointer)) problems.push(problem)
    }
  } else {
    const nameProblem = validateServerName((doc as {name: unknown}).name)
    if (nameProblem) problems.push({pointer: '/name', message: nameProblem})
  }
  return problems.slice(0, MAX_PROBLEMS)
}

function describe(e: ErrorObject): SchemaProblem | undefined {
  const at = e.instancePath
  switch (e.keyword) {
    // The branch that failed inside if/then/else already has its own error.
    case 'if':
      return undefined
    case 'required':
      return {
        pointer: `${at}/${escapePointer((e.params as {missingProperty: string}).missingProperty)}`,
        message: 'is required',
      }
    case 'not':
      return {pointer: at, message: 'must be one exact version (not a range, not "latest")'}
    case 'enum':
      return {
        pointer: at,
        message: `must be one of ${(e.params as {allowedValues: unknown[]}).allowedValues.join(', ')}`,
      }
    case 'pattern':
      return {pointer: at, message: `must match ${(e.params as {pattern: string}).pattern}`}
    default:
      return {pointer: at, message: e.message ?? `fails ${e.keyword}`}
  }
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1')
}
