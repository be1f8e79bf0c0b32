import {readFileSync} from 'node:fs'
import {getCACertificates} from 'node:tls'
import {ToolgateError} from '../errors.ts'
import {isLoopbackHost, parseNoProxy, type NoProxyMatch} from './no-proxy.ts'

/**
 * How toolgate reaches the network (issue 34): the outbound HTTP proxy for each scheme, the hosts
 * reached directly, and the certificate authorities trusted for TLS. One set per process, since
 * the environment it comes from is per process: a command sets it from its flags or config
 * (`configureNetwork`), everything else reads it from the environment on first use.
 */
export interface NetworkSettings {
  proxy: {http?: URL; https?: URL}
  /** Where the proxy came from, for messages: `--proxy-url`, `HTTPS_PROXY`, … */
  proxySource: {http?: string; https?: string}
  noProxy: NoProxyMatch
  noProxyText: string
  /** The CA bundle to trust, when anything beyond Node's defaults is asked for. */
  ca?: string[]
  /** What is trusted, in words, for TLS errors and `doctor network`. */
  trust: string[]
  /**
   * Names this machine cannot resolve may still go to the proxy (which resolves them) where
   * private destinations are refused. Off: such a name cannot be checked, so it is refused.
   */
  proxyDns: boolean
}

export interface NetworkOptions {
  /** `--proxy-url` / `network.proxy`: wins over the environment, for both schemes. */
  proxyUrl?: string | undefined
  /** `--no-proxy` / `network.noProxy`: wins over NO_PROXY. */
  noProxy?: string | undefined
  /** `--ca-cert` / `network.caCertPath`: added to the trusted roots. */
  caCert?: string | undefined
  /** `--use-system-ca` / `network.useSystemCa`: the operating system's trust store too. */
  useSystemCa?: boolean | undefined
  /** `--proxy-dns` / `network.proxyDns`: let the proxy resolve names this machine cannot. */
  proxyDns?: boolean | undefined
}

export function networkSettings(
  env: NodeJS.ProcessEnv = process.env,
  options: NetworkOptions = {},
): NetworkSettings {
  const proxy: NetworkSettings['proxy'] = {}
  const proxySource: NetworkSettings['proxySource'] = {}
  for (const scheme of ['http', 'https'] as const) {
    const [source, value] = options.proxyUrl
      ? ['--proxy-url', options.proxyUrl]
      : envPair(env, `${scheme}_proxy`)
    if (!value) continue
    proxy[scheme] = parseProxyUrl(value, source)
    proxySource[scheme] = source
  }
  const noProxyText = options.noProxy ?? envPair(env, 'no_proxy')[1] ?? ''
  const trust = ["Node's bundled roots"]
  if (env.NODE_EXTRA_CA_CERTS) trust.push(`NODE_EXTRA_CA_CERTS=${env.NODE_EXTRA_CA_CERTS}`)
  let ca: string[] | undefined
  if (options.caCert || options.useSystemCa) {
    // An explicit bundle replaces Node's default store, so the defaults (which hold
    // NODE_EXTRA_CA_CERTS) go in first: --ca-cert adds to what is trusted, never narrows it.
    ca = [...getCACertificates('default')]
    if (options.useSystemCa) {
      ca.push(...getCACertificates('system'))
      trust.push('the system trust store')
    }
    if (options.caCert) {
      ca.push(...readPemFile(options.caCert))
      trust.push(`--ca-cert ${options.caCert}`)
    }
  }
  return {
    proxy,
    proxySource,
    noProxy: parseNoProxy(noProxyText),
    noProxyText,
    ...(ca ? {ca} : {}),
    trust,
    proxyDns: options.proxyDns === true,
  }
}

/**
 * Both spellings are read (curl ignores upper-case HTTP_PROXY, against CGI's HTTPOXY; toolgate is
 * no CGI program); the lower-case one wins. The name says which one was used.
 */
function envPair(env: NodeJS.ProcessEnv, lower: string): [string, string | undefined] {
  if (env[lower]) return [lower, env[lower]]
  const upper = lower.toUpperCase()
  return [upper, env[upper] || undefined]
}

function parseProxyUrl(value: string, source: string): URL {
  // A bare host:port is what many set; curl reads it as http://.
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `${source}: not a proxy URL (use http://host:port)`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `${source}: ${url.protocol} proxies are not supported (use an http:// or https:// proxy)`,
    )
  return url
}

function readPemFile(file: string): string[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ToolgateError(
      'ERR_FILE_UNREADABLE',
      `--ca-cert ${file} cannot be read (${(err as NodeJS.ErrnoException).code})`,
    )
  }
  const pems = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)
  if (!pems)
    throw new ToolgateError('ERR_CONFIG_INVALID', `--ca-cert ${file} holds no PEM certificate`)
  return pems
}

/** A proxy URL fit for a log line or a message: the password (and user) never shown. */
export function redactProxy(url: URL): string {
  const shown = new URL(url.href)
  if (shown.username || shown.password) {
    shown.username = '***'
    shown.password = ''
  }
  shown.search = ''
  shown.hash = ''
  return shown.origin === 'null' ? shown.href : shown.href.replace(/\/$/, '')
}

/** The proxy a request to `target` goes through, or undefined when it goes directly. */
export function proxyFor(settings: NetworkSettings, target: URL): URL | undefined {
  const scheme = target.protocol === 'https:' ? 'https' : 'http'
  const proxy = settings.proxy[scheme]
  if (!proxy) return undefined
  const port = Number(target.port || (scheme === 'https' ? 443 : 80))
  if (isLoopbackHost(target.hostname)) return undefined
  if (settings.noProxy(target.hostname, port)) return undefined
  return proxy
}

let current: NetworkSettings | undefined

/** This process's settings: from a command's flags or config, else from the environment. */
export function currentNetwork(): NetworkSettings {
  return (current ??= networkSettings(process.env))
}

/** Sets this process's settings (a command, once, before its first outbound call). */
export function configureNetwork(
  options: NetworkOptions,
  env: NodeJS.ProcessEnv = process.env,
): NetworkSettings {
  current = networkSettings(env, options)
  return current
}

/** The network flags of a command (src/commands/network-flags.ts). */
export interface NetworkFlagValues {
  'proxy-url'?: string | undefined
  'no-proxy'?: string | undefined
  'ca-cert'?: string | undefined
  'use-system-ca'?: boolean | undefined
  'proxy-dns'?: boolean | undefined
}

/** The network flags of a command, over its config file's `network`, applied to this process. */
export function configureFromFlags(
  flags: NetworkFlagValues,
  config: NetworkOptions = {},
): NetworkSettings {
  return configureNetwork({
    proxyUrl: flags['proxy-url'] ?? config.proxyUrl,
    noProxy: flags['no-proxy'] ?? config.noProxy,
    caCert: flags['ca-cert'] ?? config.caCert,
    useSystemCa: flags['use-system-ca'] || config.useSystemCa,
    proxyDns: flags['proxy-dns'] || config.proxyDns,
  })
}
