import {Flags} from '@oclif/core'
import {DEFAULT_MAX_BODY} from '../lib/proxy/body-limit.ts'
import {remoteAuthFlags} from './remote-auth-flags.ts'

/**
 * The flags of the request pipeline (contract §3), shared by every command that fronts or reaches
 * an MCP server (`proxy`, `run`, `proxy stdio`, `auth explain`): a flag added here works in all of
 * them. Behaviour: src/lib/proxy/pipeline.ts. `helpGroup` keeps long flag lists readable.
 */

/** How the proxy front listens and what it admits (body limit, Origin, RFC 9728 resource). */
export const frontFlags = {
  host: Flags.string({
    description: 'Listen host (IP or hostname).',
    default: '127.0.0.1',
    helpGroup: 'LISTEN',
  }),
  'internal-address': Flags.string({
    description:
      'Also serve /health, /readiness, /version and /metrics (Prometheus) on this address (host:port, :port); never on the client port.',
    helpGroup: 'LISTEN',
  }),
  'allowed-origins': Flags.string({
    description: 'Exact-match allowlist for the Origin header (repeatable).',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: 'LISTEN',
  }),
  'max-request-body-size': Flags.integer({
    description: `Maximum inbound request body size in bytes (0 = ${DEFAULT_MAX_BODY} bytes, 8 MiB).`,
    default: 0,
    min: 0,
    helpGroup: 'LISTEN',
  }),
  'max-connections': Flags.integer({
    description: 'Concurrent client connections; more are answered 503 [default: 512].',
    min: 1,
    helpGroup: 'LISTEN',
  }),
  'require-auth': Flags.boolean({
    description:
      'Refuse to start without incoming authentication (instead of warning on a non-loopback address).',
    default: false,
    helpGroup: 'INCOMING AUTH',
  }),
  'resource-url': Flags.string({
    description: 'Resource URL advertised at /.well-known/oauth-protected-resource (RFC 9728).',
    helpGroup: 'INCOMING AUTH',
  }),
}

/** Incoming token validation (contract §2). */
export const incomingAuthFlags = {
  'oidc-issuer': Flags.string({
    description: 'Issuer URL for incoming-token validation.',
    helpGroup: 'INCOMING AUTH',
  }),
  'oidc-audience': Flags.string({
    description: 'Expected audience of incoming tokens.',
    helpGroup: 'INCOMING AUTH',
  }),
  'oidc-client-id': Flags.string({
    description: 'OIDC client ID (for introspection).',
    helpGroup: 'INCOMING AUTH',
  }),
  'oidc-client-secret': Flags.string({
    description: 'OIDC client secret (for introspection).',
    helpGroup: 'INCOMING AUTH',
  }),
  'oidc-introspection-url': Flags.string({
    description: 'Token introspection endpoint (RFC 7662).',
    helpGroup: 'INCOMING AUTH',
  }),
  'oidc-jwks-url': Flags.string({
    description: 'JWKS URL (skips OIDC discovery).',
    helpGroup: 'INCOMING AUTH',
  }),
  'oidc-scopes': Flags.string({
    description: 'Scopes advertised in the well-known endpoint.',
    multiple: true,
    multipleNonGreedy: true,
    default: ['openid'],
    helpGroup: 'INCOMING AUTH',
  }),
}

/** Cedar authorization after incoming authentication (contract §6). */
export const authzFlags = {
  'authz-config': Flags.string({
    description:
      'Cedar authorization policy file (JSON or YAML), applied after incoming authentication.',
    helpGroup: 'AUTHORIZATION',
  }),
  // The audit trail (issue 35, docs/audit.md) sits with authorization: who did what, and why allowed.
  'audit-log': Flags.string({
    description:
      'Audit trail: a record per MCP message and per refusal, as hash-chained JSON lines in FILE (0600, rotated); - for stdout; udp://HOST:PORT, tcp://HOST:PORT or unix:/PATH for syslog (RFC 5424); otlp for OpenTelemetry logs (--otel-endpoint).',
    helpGroup: 'AUDIT',
  }),
  'audit-include-args': Flags.boolean({
    description:
      'Record tool and prompt arguments too (values of secret-looking keys are redacted).',
    default: false,
    helpGroup: 'AUDIT',
  }),
  'otel-endpoint': Flags.string({
    description:
      'OpenTelemetry: send a trace of every request to this OTLP/HTTP collector (else OTEL_EXPORTER_OTLP_ENDPOINT, when set).',
    helpGroup: 'AUDIT',
  }),
  'audit-redact-keys': Flags.string({
    description: 'More argument names whose values are redacted (comma-separated).',
    helpGroup: 'AUDIT',
  }),
}

export const grouped = <T extends Record<string, object>>(flags: T, helpGroup: string): T =>
  Object.fromEntries(Object.entries(flags).map(([name, flag]) => [name, {...flag, helpGroup}])) as T

/** Credentials toward the remote server: OAuth login, bearer, token exchange, injected headers. */
export const outgoingAuthFlags = {
  ...grouped(remoteAuthFlags, 'OUTGOING AUTH'),
  'remote-forward-incoming-token': Flags.boolean({
    description:
      "Forward the client's own bearer token to the target (token passthrough; off by default, as the MCP authorization spec requires).",
    default: false,
    helpGroup: 'OUTGOING AUTH',
  }),
  'remote-auth-bearer-token': Flags.string({
    description: 'Bearer token for the remote server (or env TOOLGATE_REMOTE_AUTH_BEARER_TOKEN).',
    helpGroup: 'OUTGOING AUTH',
  }),
  'remote-auth-bearer-token-file': Flags.string({
    description: 'File holding the bearer token for the remote server.',
    helpGroup: 'OUTGOING AUTH',
  }),
  'remote-forward-headers': Flags.string({
    description: 'Header injected into forwarded requests, Name=Value (repeatable).',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: 'OUTGOING AUTH',
  }),
  'remote-forward-headers-secret': Flags.string({
    description:
      'Header injected into forwarded requests whose value comes from the secrets store, Name=secret-name (repeatable; overrides --remote-forward-headers of the same name).',
    multiple: true,
    // One value per occurrence, so a following SERVER_NAME is not swallowed as a second value.
    multipleNonGreedy: true,
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-url': Flags.string({
    description: 'Token exchange endpoint (RFC 8693); enables token exchange.',
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-audience': Flags.string({
    description: 'Target audience of exchanged tokens.',
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-client-id': Flags.string({
    description: 'Client ID for token exchange.',
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-client-secret': Flags.string({
    description: 'Client secret for token exchange.',
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-client-secret-file': Flags.string({
    description: 'File holding the token-exchange client secret.',
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-header-name': Flags.string({
    description: 'Header that carries the exchanged token (default: replaces Authorization).',
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-scopes': Flags.string({
    description: 'Scopes requested for exchanged tokens.',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: 'OUTGOING AUTH',
  }),
  'token-exchange-subject-token-type': Flags.string({
    // No oclif default: the option is only valid with --token-exchange-url, so an implicit value
    // must not trip that check. The default is applied in src/lib/proxy/options.ts.
    description: 'Type of the subject token: access_token or id_token [default: access_token].',
    options: ['access_token', 'id_token'],
    helpGroup: 'OUTGOING AUTH',
  }),
}
