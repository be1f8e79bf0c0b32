import {Flags} from '@oclif/core'
import {DEFAULT_CALLBACK_PORT, DEFAULT_TIMEOUT} from '../lib/oauth/remote-auth-options.ts'

/**
 * The `--remote-auth*` OAuth flags (spec: proxy command), shared by every command that talks to a
 * remote MCP server (`proxy`, and later `proxy stdio` and `run --url`). Behaviour: src/lib/oauth.
 */
export const remoteAuthFlags = {
  'remote-auth': Flags.boolean({
    description:
      'Log in to the remote server with OAuth/OIDC (browser login, refreshed and saved).',
    default: false,
  }),
  'remote-auth-issuer': Flags.string({
    description: 'Issuer URL for remote authentication (OIDC discovery, then RFC 8414).',
  }),
  'remote-auth-authorize-url': Flags.string({
    description:
      'Authorization endpoint; with --remote-auth-token-url, instead of the issuer (plain OAuth).',
  }),
  'remote-auth-token-url': Flags.string({
    description:
      'Token endpoint; with --remote-auth-authorize-url, instead of the issuer (plain OAuth).',
  }),
  'remote-auth-client-id': Flags.string({
    description: 'OAuth client ID (default: register one dynamically, RFC 7591).',
  }),
  'remote-auth-client-secret': Flags.string({
    description:
      'OAuth client secret (or --remote-auth-client-secret-file, or env TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET).',
  }),
  'remote-auth-client-secret-file': Flags.string({
    description: 'File holding the OAuth client secret.',
  }),
  'remote-auth-client-secret-name': Flags.string({
    description:
      'Name of a secret in the secrets store (toolgate secret set) holding the OAuth client secret.',
  }),
  'remote-auth-callback-port': Flags.integer({
    description: 'Port of the local OAuth callback server on 127.0.0.1.',
    default: DEFAULT_CALLBACK_PORT,
    min: 0,
    max: 65535,
  }),
  'remote-auth-scopes': Flags.string({
    description:
      'Scopes to request, comma-separated or repeated (OIDC default: openid,profile,email).',
    multiple: true,
    multipleNonGreedy: true,
  }),
  'remote-auth-scope-param-name': Flags.string({
    description: 'Name of the scope query parameter in the authorization URL (default: scope).',
  }),
  'remote-auth-resource': Flags.string({
    description:
      'OAuth 2.0 resource indicator (RFC 8707) for authorize, token and refresh requests.',
  }),
  'remote-auth-skip-browser': Flags.boolean({
    description: 'Do not open a browser; print the login URL to stderr.',
    default: false,
  }),
  'remote-auth-flow': Flags.string({
    description:
      'How a person logs in: browser, device (RFC 8628 code approved on another machine) or auto [default: auto: browser with a display, device over SSH, an error under CI].',
    options: ['browser', 'device', 'auto'],
  }),
  'remote-auth-grant': Flags.string({
    description:
      'authorization_code (a person logs in) or client_credentials (a machine identity for CI) [default: authorization_code].',
    options: ['authorization_code', 'client_credentials'],
  }),
  'remote-auth-client-key-file': Flags.string({
    description:
      'Private key (PEM or JWK) for private_key_jwt client authentication (RFC 7523) with --remote-auth-grant client_credentials.',
  }),
  'remote-auth-timeout': Flags.string({
    description: 'Time allowed for the browser login (e.g. 30s, 1m, 2m30s).',
    default: DEFAULT_TIMEOUT,
  }),
}
