/**
 * HTTP Basic client authentication for an OAuth endpoint (token, introspection, token exchange).
 *
 * RFC 6749 §2.3.1: the client id and secret are each encoded with application/x-www-form-urlencoded
 * (Appendix B) first, then joined with `:` and base64-encoded (RFC 7617 §2). So a space becomes `+`,
 * and `:`, `+`, `%` and every non-ASCII byte are percent-encoded; only letters, digits and `*-._`
 * stay as they are. `encodeURIComponent` alone is wrong here: it writes a space as `%20` (servers
 * that form-decode still read it, but the spec's Appendix B vector is `+`) and leaves `!'()~`
 * unencoded. URLSearchParams serialises with exactly the WHATWG form-urlencoded rules.
 */
export function formUrlEncode(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1)
}

/** The `Authorization` header value for client_secret_basic. */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  const pair = `${formUrlEncode(clientId)}:${formUrlEncode(clientSecret)}`
  return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`
}
