/**
 * Server name rules of the MCP registry (contract §1): `namespace/name`, exactly one `/`,
 * 3–200 characters in all. The namespace is a reverse-DNS style label run (`io.github.user`), the
 * name may also hold `_`. These match the upstream registry's server.json schema, so names that
 * upstream accepts are accepted here and nothing else.
 */
const SERVER_NAME_MIN = 3
const SERVER_NAME_MAX = 200

const NAMESPACE_RE = /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/
const NAME_RE = /^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$/

/** Returns a human reason when `name` is not a valid server name, else undefined. */
export function validateServerName(name: unknown): string | undefined {
  if (typeof name !== 'string') return 'must be a string'
  if (name.length < SERVER_NAME_MIN || name.length > SERVER_NAME_MAX) {
    return `must be ${SERVER_NAME_MIN} to ${SERVER_NAME_MAX} characters long (got ${name.length})`
  }
  const slash = name.indexOf('/')
  if (slash === -1 || name.indexOf('/', slash + 1) !== -1) {
    return 'must contain exactly one "/" (namespace/name)'
  }
  const namespace = name.slice(0, slash)
  const local = name.slice(slash + 1)
  if (!NAMESPACE_RE.test(namespace)) {
    return 'namespace (before "/") must be letters, digits, "." or "-", starting and ending with a letter or digit'
  }
  if (!NAME_RE.test(local)) {
    return 'name (after "/") must be letters, digits, ".", "_" or "-", starting and ending with a letter or digit'
  }
  return undefined
}
