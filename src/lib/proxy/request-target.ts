import {hasDotSegment} from '../server/dot-segments.ts'

/**
 * Whether a request target may be forwarded. The target URI's base path is a boundary: the proxy
 * prefixes it to the client's path, so a path that a server (or a proxy in between) would
 * normalise upward — `..` or `.` segments, literal or `%2e`-encoded, an encoded slash or
 * backslash (`..%2f`), a literal backslash — could step out of it. Such paths are refused rather
 * than normalised: clients remove dot segments themselves (RFC 3986 §5.2.4), so only a hostile or
 * broken client sends one. Only origin-form targets (`/path?query`, RFC 9112 §3.2.1) are accepted.
 */
export function refusedRequestTarget(url: string | undefined): string | undefined {
  if (!url || !url.startsWith('/') || url.startsWith('//'))
    return 'the request target must be an absolute path'
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  if (/%2f|%5c|\\/i.test(path)) return 'encoded slashes and backslashes are not allowed in the path'
  if (hasDotSegment(path)) return 'dot segments are not allowed in the path'
  return undefined
}
