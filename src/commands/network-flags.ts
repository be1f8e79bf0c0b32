import {Flags} from '@oclif/core'

/**
 * How toolgate reaches the network (issue 34, docs/network.md): on every command that makes
 * outbound requests. The environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, NODE_EXTRA_CA_CERTS)
 * applies without them; a flag wins over its variable.
 */
export const networkFlags = {
  'proxy-url': Flags.string({
    description:
      'Outbound HTTP proxy for every request toolgate makes (wins over HTTPS_PROXY/HTTP_PROXY); user:password@ in it is sent as Basic. Loopback is always reached directly.',
    helpGroup: 'NETWORK',
  }),
  'no-proxy': Flags.string({
    description:
      'Hosts reached without the proxy, as NO_PROXY (wins over it): names, .domains, IPs, CIDRs, host:port, *.',
    helpGroup: 'NETWORK',
  }),
  'ca-cert': Flags.string({
    description:
      'PEM file of certificate authorities to trust for outbound TLS, added to the defaults.',
    helpGroup: 'NETWORK',
  }),
  'proxy-dns': Flags.boolean({
    description:
      'Let the proxy resolve names this machine cannot (otherwise such a name is refused where private destinations are).',
    default: false,
    helpGroup: 'NETWORK',
  }),
  'use-system-ca': Flags.boolean({
    description: "Trust the operating system's certificate store too.",
    default: false,
    helpGroup: 'NETWORK',
  }),
}
