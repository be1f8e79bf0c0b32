import {execFileSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

/**
 * A private certificate authority and one server certificate signed by it, minted with the Debian
 * `openssl` binary (node:crypto cannot issue X.509 certificates). For `caCertPath` tests and the
 * Kubernetes service-account scenario. Files live in a temp dir removed by `cleanup()`.
 */
export interface TestPki {
  dir: string
  caCertPath: string
  caCert: string
  cert: string
  key: string
  cleanup(): void
}

export function createTestPki(opts: {altNames?: string[]; commonName?: string} = {}): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-pki-'))
  const altNames = opts.altNames ?? [
    'IP:127.0.0.1',
    'IP:::1',
    'DNS:localhost',
    'DNS:kubernetes.default.svc.cluster.local',
  ]
  const p = (name: string) => join(dir, name)
  const run = (args: string[]) =>
    execFileSync('openssl', args, {stdio: ['ignore', 'ignore', 'pipe']})
  run([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=toolgate test CA',
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.crt'),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ])
  run([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${opts.commonName ?? 'localhost'}`,
    '-keyout',
    p('server.key'),
    '-out',
    p('server.csr'),
  ])
  writeFileSync(
    p('ext.cnf'),
    `subjectAltName=${altNames.join(',')}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`,
  )
  run([
    'x509',
    '-req',
    '-in',
    p('server.csr'),
    '-CA',
    p('ca.crt'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    p('server.crt'),
    '-extfile',
    p('ext.cnf'),
  ])
  return {
    dir,
    caCertPath: p('ca.crt'),
    caCert: readFileSync(p('ca.crt'), 'utf8'),
    cert: readFileSync(p('server.crt'), 'utf8'),
    key: readFileSync(p('server.key'), 'utf8'),
    cleanup: () => rmSync(dir, {recursive: true, force: true}),
  }
}
