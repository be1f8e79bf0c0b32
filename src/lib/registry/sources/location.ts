/**
 * How a source's location appears in logs and errors. URLs may carry credentials in the userinfo
 * or the query (`?token=…`), so only scheme, host and path are ever shown.
 */
export function describeUrl(url: string | URL): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`
  } catch {
    return '(invalid URL)'
  }
}
