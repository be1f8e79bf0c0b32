import {test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {isToolgateError, type ToolgateError} from '../../../src/lib/errors.ts'
import {
  loadServeConfig,
  validateServeConfig,
  type ServeConfigOptions,
} from '../../../src/lib/config/serve-config.ts'

const opts: ServeConfigOptions = {defaultDbPath: '/data/registry.db', baseDir: '/etc/toolgate'}
const provider = {name: 'sso', issuerUrl: 'https://auth.example.com', audience: 'api://registry'}
const oauth = {resourceUrl: 'https://registry.example.com', providers: [provider]}

function problems(doc: unknown, o: Partial<ServeConfigOptions> = {}): string[] {
  try {
    validateServeConfig(doc, {...opts, ...o})
  } catch (err) {
    assert.ok(isToolgateError(err, 'ERR_CONFIG_INVALID'), String(err))
    return ((err as ToolgateError).details?.problems as {path: string; message: string}[]).map(
      (p) => `${p.path}: ${p.message}`,
    )
  }
  return []
}

test('a minimal oauth config is valid and gets the defaults', () => {
  const cfg = validateServeConfig({auth: {oauth}}, opts)
  assert.equal(cfg.auth.mode, 'oauth')
  assert.ok(cfg.auth.mode === 'oauth' && cfg.auth.oauth.realm === 'mcp-registry')
  assert.deepEqual(cfg.registries, [{name: 'default', sources: []}])
  assert.deepEqual(cfg.sources, [])
  assert.deepEqual(cfg.storage, {kind: 'sqlite', path: '/data/registry.db'})
})

test('the full contract example is accepted and turned into typed sources', () => {
  const cfg = validateServeConfig(
    {
      sources: [
        {name: 'local', file: {path: './servers.json'}},
        {
          name: 'upstream',
          api: {endpoint: 'https://registry.example.com'},
          syncPolicy: {interval: '1h'},
          filter: {names: {include: ['io.github.*'], exclude: []}},
        },
        {
          name: 'remote-file',
          file: {url: 'https://example.com/servers.json'},
          syncPolicy: {interval: '30m'},
        },
      ],
      registries: [{name: 'default', sources: ['local', 'upstream']}],
      storage: {sqlite: {path: './registry.db'}},
      auth: {mode: 'oauth', oauth: {...oauth, realm: 'r', publicPaths: ['/docs']}},
    },
    opts,
  )
  assert.deepEqual(cfg.sources, [
    {kind: 'file', name: 'local', path: '/etc/toolgate/servers.json'},
    {
      kind: 'api',
      name: 'upstream',
      endpoint: 'https://registry.example.com',
      syncIntervalMs: 3_600_000,
      filter: {names: {include: ['io.github.*'], exclude: []}},
    },
    {
      kind: 'file',
      name: 'remote-file',
      url: 'https://example.com/servers.json',
      syncIntervalMs: 1_800_000,
    },
  ])
  assert.deepEqual(cfg.storage, {kind: 'sqlite', path: '/etc/toolgate/registry.db'})
})

test('without registries, a default registry is fed by every source in order', () => {
  const cfg = validateServeConfig(
    {
      sources: [
        {name: 'b', file: {path: '/x'}},
        {name: 'a', file: {path: '/y'}},
      ],
      auth: {mode: 'anonymous'},
    },
    opts,
  )
  assert.deepEqual(cfg.registries, [{name: 'default', sources: ['b', 'a']}])
})

const BAD: [string, unknown, RegExp][] = [
  ['unknown top-level key', {auth: {oauth}, listen: ':80'}, /^listen: unknown key/],
  [
    'unknown provider key',
    {auth: {oauth: {...oauth, providers: [{...provider, issuer: 'x'}]}}},
    /^auth\.oauth\.providers\[0\]\.issuer: unknown key/,
  ],
  [
    'wrong type',
    {auth: {oauth: {...oauth, publicPaths: '/docs'}}},
    /^auth\.oauth\.publicPaths: must be a list/,
  ],
  [
    'wrong boolean type',
    {auth: {oauth: {...oauth, providers: [{...provider, allowPrivateIP: 'yes'}]}}},
    /allowPrivateIP: must be true or false/,
  ],
  [
    'provider without issuerUrl',
    {auth: {oauth: {...oauth, providers: [provider, {name: 'b', audience: 'x'}]}}},
    /^auth\.oauth\.providers\[1\]\.issuerUrl: is required/,
  ],
  [
    'provider without audience',
    {auth: {oauth: {...oauth, providers: [{name: 'a', issuerUrl: 'https://a.example'}]}}},
    /providers\[0\]\.audience: is required/,
  ],
  [
    'http issuer on a public host',
    {auth: {oauth: {...oauth, providers: [{...provider, issuerUrl: 'http://auth.example.com'}]}}},
    /providers\[0\]\.issuerUrl: must use https/,
  ],
  [
    'issuer that is not a URL',
    {auth: {oauth: {...oauth, providers: [{...provider, issuerUrl: 'auth example'}]}}},
    /issuerUrl: "auth example" is not a valid URL/,
  ],
  [
    'oauth without resourceUrl',
    {auth: {oauth: {providers: [provider]}}},
    /^auth\.oauth\.resourceUrl: is required/,
  ],
  [
    'oauth without providers',
    {auth: {oauth: {resourceUrl: 'https://r.example'}}},
    /^auth\.oauth\.providers: is required/,
  ],
  [
    'oauth with an empty provider list',
    {auth: {oauth: {...oauth, providers: []}}},
    /needs at least one provider/,
  ],
  [
    'empty config (secure default)',
    {},
    /^auth\.oauth: is required in oauth mode.*--auth-mode anonymous/,
  ],
  ['bad auth mode', {auth: {mode: 'none'}}, /^auth\.mode: must be "oauth" or "anonymous"/],
  [
    'a public path of / (would open every route)',
    {auth: {oauth: {...oauth, publicPaths: ['/docs', '/']}}},
    /^auth\.oauth\.publicPaths\[1\]: "\/" would make every route public/,
  ],
  [
    'source name not a DNS label',
    {sources: [{name: 'My_Source', file: {path: '/x'}}], auth: {mode: 'anonymous'}},
    /^sources\[0\]\.name: "My_Source" must be a DNS label/,
  ],
  [
    'source with both file and api',
    {
      sources: [{name: 'a', file: {path: '/x'}, api: {endpoint: 'https://e'}}],
      auth: {mode: 'anonymous'},
    },
    /^sources\[0\]: needs exactly one/,
  ],
  [
    'managed source with options it does not have',
    {sources: [{name: 'a', managed: {path: '/x'}}], auth: {mode: 'anonymous'}},
    /^sources\[0\]\.managed\.path: unknown key/,
  ],
  [
    'managed source in two registries',
    {
      sources: [{name: 'team', managed: {}}],
      registries: [
        {name: 'sandbox', sources: ['team']},
        {name: 'prod', sources: ['team']},
      ],
      auth: {mode: 'anonymous'},
    },
    /^registries: managed source "team" is in registries "sandbox" and "prod": a managed source belongs to one registry/,
  ],
  [
    'managed source with a filter',
    {
      sources: [{name: 'team', managed: {}, filter: {names: {include: ['io.x/*']}}}],
      auth: {mode: 'anonymous'},
    },
    /^sources\[0\]\.filter: does not apply to a managed source/,
  ],
  [
    'managed source that is also a file source',
    {sources: [{name: 'a', managed: {}, file: {path: '/x'}}], auth: {mode: 'anonymous'}},
    /^sources\[0\]: needs exactly one of "file", "api", "managed" or "git"/,
  ],
  [
    'api source without interval',
    {sources: [{name: 'a', api: {endpoint: 'https://e.example'}}], auth: {mode: 'anonymous'}},
    /^sources\[0\]\.syncPolicy\.interval: is required/,
  ],
  [
    'bad interval',
    {
      sources: [{name: 'a', api: {endpoint: 'https://e.example'}, syncPolicy: {interval: '10'}}],
      auth: {mode: 'anonymous'},
    },
    /^sources\[0\]\.syncPolicy\.interval: "10" is not a duration/,
  ],
  [
    'registry referencing an unknown source',
    {
      sources: [{name: 'a', file: {path: '/x'}}],
      registries: [{name: 'default', sources: ['a', 'b']}],
      auth: {mode: 'anonymous'},
    },
    /^registries\[0\]\.sources\[1\]: unknown source "b"/,
  ],
  [
    'duplicate registry name',
    {
      registries: [
        {name: 'x', sources: []},
        {name: 'x', sources: []},
      ],
      auth: {mode: 'anonymous'},
    },
    /^registries\[1\]\.name: duplicate/,
  ],
  [
    'postgres url with wrong scheme',
    {storage: {postgres: {url: 'mysql://x'}}, auth: {mode: 'anonymous'}},
    /^storage\.postgres\.url: must start with postgres/,
  ],
  ['root that is not an object', ['a'], /^\(root\): must be an object/],
]

for (const [name, doc, expected] of BAD) {
  test(`rejects a config with ${name}, naming the field`, () => {
    const found = problems(doc)
    assert.ok(
      found.some((p) => expected.test(p)),
      `expected ${expected} in ${JSON.stringify(found)}`,
    )
  })
}

test('reports every problem together, not only the first', () => {
  const found = problems({bogus: 1, auth: {oauth: {resourceUrl: 'nope', providers: [{name: 'a'}]}}})
  assert.ok(found.length >= 4, JSON.stringify(found))
})

test('an http issuer on a loopback host is allowed', () => {
  for (const issuerUrl of [
    'http://127.0.0.1:9000',
    'http://localhost:9000/realms/x',
    'http://[::1]:9000',
  ]) {
    assert.deepEqual(
      problems({auth: {oauth: {...oauth, providers: [{...provider, issuerUrl}]}}}),
      [],
      issuerUrl,
    )
  }
})

test('--auth-mode anonymous overrides oauth in the file and needs no providers', () => {
  const cfg = validateServeConfig(
    {auth: {mode: 'oauth', oauth: {resourceUrl: 'https://r.example'}}},
    {...opts, authMode: 'anonymous'},
  )
  assert.equal(cfg.auth.mode, 'anonymous')
})

test('--auth-mode oauth overrides anonymous in the file and then requires providers', () => {
  assert.ok(
    problems({auth: {mode: 'anonymous'}}, {authMode: 'oauth'}).some((p) =>
      p.startsWith('auth.oauth: is required'),
    ),
  )
})

test('an unreadable clientSecretFile or authTokenFile is an error naming the provider', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tg-cfg-'))
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  const found = problems(
    {
      auth: {
        oauth: {
          ...oauth,
          providers: [
            {
              ...provider,
              name: 'corp',
              clientId: 'c',
              clientSecretFile: './missing-secret',
              authTokenFile: join(dir, 'nope'),
            },
          ],
        },
      },
    },
    {baseDir: dir},
  )
  assert.ok(
    found.some((p) =>
      /^auth\.oauth\.providers\[0\]\.clientSecretFile: provider "corp": cannot read .*missing-secret/.test(
        p,
      ),
    ),
    JSON.stringify(found),
  )
  assert.ok(
    found.some((p) =>
      /^auth\.oauth\.providers\[0\]\.authTokenFile: provider "corp": cannot read/.test(p),
    ),
    JSON.stringify(found),
  )
})

test('an empty or whitespace-only clientSecretFile or authTokenFile is one error naming the provider', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tg-cfg-'))
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  writeFileSync(join(dir, 'empty'), '', {mode: 0o600})
  writeFileSync(join(dir, 'blank'), ' \n\n', {mode: 0o600})
  const found = problems(
    {
      auth: {
        oauth: {
          ...oauth,
          providers: [
            {
              ...provider,
              name: 'corp',
              clientId: 'c',
              clientSecretFile: 'empty',
              authTokenFile: 'blank',
            },
          ],
        },
      },
    },
    {baseDir: dir},
  )
  const about = (field: string) =>
    found.filter((p) => p.startsWith(`auth.oauth.providers[0].${field}: `))
  assert.deepEqual(about('clientSecretFile'), [
    `auth.oauth.providers[0].clientSecretFile: provider "corp": ${join(dir, 'empty')} is empty`,
  ])
  assert.deepEqual(about('authTokenFile'), [
    `auth.oauth.providers[0].authTokenFile: provider "corp": ${join(dir, 'blank')} is empty`,
  ])
})

// One loopback rule everywhere (src/lib/http/loopback.ts): plain http only for these hosts.
for (const [issuerUrl, ok] of [
  ['http://localhost:9000', true],
  ['http://app.localhost:9000', true],
  ['http://127.0.0.2:9000', true],
  ['http://[::1]:9000', true],
  ['http://[0:0:0:0:0:0:0:1]:9000', true],
  ['http://[::ffff:127.0.0.1]:9000', true],
  ['http://[::ffff:10.0.0.1]:9000', false],
  ['http://localhost.example.com:9000', false],
  ['http://10.0.0.1:9000', false],
] as const) {
  test(`an http issuerUrl ${issuerUrl} is ${ok ? 'accepted (loopback)' : 'refused (not loopback)'}`, () => {
    const found = problems({auth: {oauth: {...oauth, providers: [{...provider, issuerUrl}]}}})
    assert.equal(
      found.some((p) => /^auth\.oauth\.providers\[0\]\.issuerUrl: must use https/.test(p)),
      !ok,
      JSON.stringify(found),
    )
  })
}

test('readable secret files are accepted and resolved against the config directory; contents never appear in errors', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tg-cfg-'))
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  writeFileSync(join(dir, 'secret'), 's3cr3t-value\n', {mode: 0o600})
  const cfg = validateServeConfig(
    {
      auth: {
        oauth: {...oauth, providers: [{...provider, clientId: 'c', clientSecretFile: 'secret'}]},
      },
    },
    {...opts, baseDir: dir},
  )
  assert.ok(
    cfg.auth.mode === 'oauth' &&
      cfg.auth.oauth.providers[0]?.clientSecretFile === join(dir, 'secret'),
  )
  const found = problems(
    {
      bogus: true,
      auth: {
        oauth: {...oauth, providers: [{...provider, clientId: 'c', clientSecretFile: 'secret'}]},
      },
    },
    {baseDir: dir},
  )
  assert.ok(!found.join('\n').includes('s3cr3t'))
})

test('loads YAML and JSON files by extension and reports parse errors naming the file', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tg-cfg-'))
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  writeFileSync(join(dir, 'a.yaml'), 'auth:\n  mode: anonymous\n')
  writeFileSync(join(dir, 'a.json'), '{"auth": {"mode": "anonymous"}}')
  writeFileSync(join(dir, 'bad.json'), '{"auth": ')
  writeFileSync(join(dir, 'dup.yaml'), 'auth:\n  mode: anonymous\n  mode: oauth\n')
  assert.equal(loadServeConfig(join(dir, 'a.yaml'), opts).auth.mode, 'anonymous')
  assert.equal(loadServeConfig(join(dir, 'a.json'), opts).auth.mode, 'anonymous')
  assert.throws(
    () => loadServeConfig(join(dir, 'bad.json'), opts),
    (e: ToolgateError) =>
      e.code === 'ERR_CONFIG_INVALID' &&
      e.message.includes('bad.json') &&
      /not valid JSON/.test(e.message),
  )
  assert.throws(
    () => loadServeConfig(join(dir, 'dup.yaml'), opts),
    (e: ToolgateError) => e.code === 'ERR_CONFIG_INVALID' && e.message.includes('dup.yaml'),
  )
  assert.throws(
    () => loadServeConfig(join(dir, 'none.yaml'), opts),
    (e: ToolgateError) => e.code === 'ERR_CONFIG_NOT_FOUND',
  )
})

test('URL errors never echo credentials written into the URL', () => {
  const found = problems({
    sources: [
      {
        name: 'a',
        api: {endpoint: 'https://user:hunter2@registry.example.com'},
        syncPolicy: {interval: '1h'},
      },
      {name: 'b', api: {endpoint: 'https://user:hunter2@ bad host'}, syncPolicy: {interval: '1h'}},
    ],
    auth: {mode: 'anonymous'},
  })
  assert.equal(found.length, 2, JSON.stringify(found))
  assert.ok(!found.join('\n').includes('hunter2'))
})

test('network: proxy, noProxy, caCertPath and useSystemCa (issue 34); every mistake named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-net-cfg-'))
  try {
    writeFileSync(
      join(dir, 'ca.pem'),
      '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
    )
    const network = {
      proxy: 'http://proxy:3128',
      noProxy: '.corp',
      caCertPath: 'ca.pem',
      useSystemCa: true,
    }
    const cfg = validateServeConfig({auth: {oauth}, network}, {...opts, baseDir: dir})
    assert.deepEqual(cfg.network, {
      proxyUrl: 'http://proxy:3128',
      noProxy: '.corp',
      caCert: join(dir, 'ca.pem'),
      useSystemCa: true,
    })
    assert.deepEqual(
      problems(
        {
          auth: {oauth},
          network: {proxy: 'socks5://p:1', caCertPath: 'nope.pem', useSystemCa: 'yes', port: 1},
        },
        {baseDir: dir},
      ),
      [
        'network.port: unknown key (allowed: proxy, noProxy, caCertPath, useSystemCa, proxyDns)',
        'network.proxy: must be an http:// or https:// proxy URL (http://host:port)',
        `network.caCertPath: cannot read ${join(dir, 'nope.pem')} (no such file)`,
        'network.useSystemCa: must be true or false, got the string "yes"',
      ],
    )
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})
