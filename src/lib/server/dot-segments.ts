/**
 * Whether a request path (before its query) has a `.` or `..` segment, literally or
 * percent-encoded (`%2e`, RFC 3986 §2.3 says it is equivalent to `.`). RFC 3986 §5.2.4 has clients
 * remove such segments, so a request still carrying one is unusual, and it is refused outright:
 * the auth gate matches public paths on a normalised path while routing uses the raw one, and
 * the two must never disagree about which resource a request names.
 */
export function hasDotSegment(path: string): boolean {
  let start = 0
  while (start <= path.length) {
    let end = path.indexOf('/', start)
    if (end === -1) end = path.length
    if (isDotSegment(path.slice(start, end))) return true
    start = end + 1
  }
  return false
}

function isDotSegment(segment: string): boolean {
  if (segment.length === 0 || segment.length > 6) return false
  const plain = segment.replace(/%2e/gi, '.')
  return plain === '.' || plain === '..'
}
