import type {AuthFailureKind} from './types.ts'

/**
 * Builds `WWW-Authenticate` values. Quoted-string values escape `"` and `\` and drop CR/LF
 * (RFC 9110 §11.2 quoted-string; CR/LF would allow header injection).
 */
export function quote(value: string): string {
  return '"' + value.replace(/[\r\n]/g, '').replace(/["\\]/g, (c) => '\\' + c) + '"'
}

/**
 * `serve` challenge, contract §1:
 * Bearer realm="…", error="…", error_description="…", resource_metadata="<resourceUrl>/.well-known/oauth-protected-resource"
 * (RFC 6750 §3 error codes; RFC 9728 §5.1 resource_metadata).
 */
export function registryChallenge(opts: {
  realm: string
  error: AuthFailureKind
  description: string
  resourceUrl: string
}): string {
  const metadata = opts.resourceUrl.replace(/\/+$/, '') + '/.well-known/oauth-protected-resource'
  return (
    `Bearer realm=${quote(opts.realm)}, error=${quote(opts.error)}, ` +
    `error_description=${quote(opts.description)}, resource_metadata=${quote(metadata)}`
  )
}

/**
 * `proxy`/`run` challenge, contract §2: parameters in the order realm, resource_metadata, scope,
 * error, error_description, each only when known.
 */
export function proxyChallenge(opts: {
  realm?: string
  resourceMetadata?: string
  scope?: string
  error?: AuthFailureKind
  description?: string
}): string {
  const parts: string[] = []
  if (opts.realm) parts.push(`realm=${quote(opts.realm)}`)
  if (opts.resourceMetadata) parts.push(`resource_metadata=${quote(opts.resourceMetadata)}`)
  if (opts.scope) parts.push(`scope=${quote(opts.scope)}`)
  if (opts.error) parts.push(`error=${quote(opts.error)}`)
  if (opts.description) parts.push(`error_description=${quote(opts.description)}`)
  return parts.length ? `Bearer ${parts.join(', ')}` : 'Bearer'
}
