/**
 * The Cedar benchmarks' inputs: a realistic token's claims, tool arguments, and `policies(n)`, a
 * set of n policies (one broad group permit, then per-tool permits on a role claim and every tenth
 * a forbid on an argument), of which one decides the benchmark's request.
 */
export const CLAIMS = {
  sub: 'alice',
  iss: 'https://auth.example.com',
  aud: 'api://toolgate',
  exp: 1_900_000_000,
  iat: 1_800_000_000,
  jti: 'b1c2d3e4f5a6b7c8d9e0',
  scope: 'openid profile email',
  client_id: 'cli',
  email: 'alice@example.com',
  groups: ['admins', 'eng', 'oncall'],
  roles: ['r7', 'viewer'],
  realm_access: {roles: ['offline_access', 'uma_authorization']},
}
export const ARGS = {message: 'hello', count: 3, dry_run: false, options: {verbose: true}}

export function policies(n: number): string[] {
  const out = [
    'permit(principal in ToolgateGroup::"admins", action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
  ]
  for (let i = 1; i < n; i++) {
    out.push(
      i % 10 === 0
        ? `forbid(principal, action == Action::"call_tool", resource == Tool::"tool${i}") when { resource has arg_path && resource.arg_path like "/etc/*" };`
        : `permit(principal, action == Action::"call_tool", resource == Tool::"tool${i}") when { principal.claim_roles.contains("r${i}") };`,
    )
  }
  return out
}
