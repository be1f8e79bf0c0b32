/**
 * Path-aware validation for configuration documents: every problem is recorded with the path of
 * the field (`auth.oauth.providers[1].issuerUrl`) and all problems are reported together, so a user
 * fixes a config in one pass instead of one error per start.
 */
export interface ConfigProblem {
  path: string
  message: string
}

export type Obj = Record<string, unknown>

export class Checker {
  readonly problems: ConfigProblem[] = []

  add(path: string, message: string): void {
    this.problems.push({path: path || '(root)', message})
  }

  /** An object with only the allowed keys; unknown keys are errors (typos must not be ignored). */
  object(value: unknown, path: string, allowed: readonly string[]): Obj | undefined {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.add(path, `must be an object, got ${describe(value)}`)
      return undefined
    }
    const obj = value as Obj
    for (const key of Object.keys(obj)) {
      if (!allowed.includes(key)) {
        this.add(join(path, key), `unknown key (allowed: ${allowed.join(', ')})`)
      }
    }
    return obj
  }

  string(
    value: unknown,
    path: string,
    opts: {required?: boolean; nonEmpty?: boolean} = {},
  ): string | undefined {
    if (value === undefined || value === null) {
      if (opts.required) this.add(path, 'is required')
      return undefined
    }
    if (typeof value !== 'string') {
      this.add(path, `must be a string, got ${describe(value)}`)
      return undefined
    }
    if ((opts.nonEmpty ?? opts.required) && value.trim() === '') {
      this.add(path, 'must not be empty')
      return undefined
    }
    return value
  }

  boolean(value: unknown, path: string): boolean | undefined {
    if (value === undefined || value === null) return undefined
    if (typeof value !== 'boolean') {
      this.add(path, `must be true or false, got ${describe(value)}`)
      return undefined
    }
    return value
  }

  array(value: unknown, path: string, opts: {required?: boolean} = {}): unknown[] | undefined {
    if (value === undefined || value === null) {
      if (opts.required) this.add(path, 'is required')
      return undefined
    }
    if (!Array.isArray(value)) {
      this.add(path, `must be a list, got ${describe(value)}`)
      return undefined
    }
    return value
  }

  stringList(value: unknown, path: string): string[] | undefined {
    const list = this.array(value, path)
    if (!list) return undefined
    const out: string[] = []
    list.forEach((item, i) => {
      const s = this.string(item, `${path}[${i}]`, {required: true})
      if (s !== undefined) out.push(s)
    })
    return out
  }
}

export function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key
}

export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'an object'
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`
  return `${typeof value} ${String(value)}`
}

// RFC 1123 DNS label: what source and registry names may be (they appear in URLs and metrics labels).
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

export function isDnsLabel(name: string): boolean {
  return DNS_LABEL.test(name)
}
