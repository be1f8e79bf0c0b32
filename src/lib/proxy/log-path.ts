/**
 * What proxy logs say about a request target: the path only. The query may carry credentials
 * (`?access_token=…`, RFC 6750 §2.3, which this proxy does not accept but clients still send) or
 * session handles (the legacy SSE transport's `?sessionId=…`), so it never reaches a log line.
 */
export function logPath(requestTarget: string | undefined): string {
  const target = requestTarget ?? '/'
  const q = target.indexOf('?')
  const h = target.indexOf('#')
  const end = q === -1 ? h : h === -1 ? q : Math.min(q, h)
  return end === -1 ? target : target.slice(0, end)
}
