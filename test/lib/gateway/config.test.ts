import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {
  DEFAULT_PAGE_SIZE,
  loadGatewayConfig,
  parseBackendFlag,
  validateGatewayConfig,
} from '../../../src/lib/gateway/config.ts'
import {exposedToolName, originalToolName} from '../../../src/lib/gateway/shaping.ts'

const where = {baseDir: '/etc/gw', where: 'gateway config test.yaml'}
const invalid = (doc: unknown, flags: string[] = [], pattern: RegExp) =>
  assert.throws(
    () => validateGatewayConfig(doc, flags.map(parseBackendFlag), where),
    (err: unknown) =>
      isToolgateError(err, 'ERR_CONFIG_INVALID') && pattern.test((err as Error).message),
  )

describe('gateway --backend values', () => {
  it('takes a workload, WORKLOAD=PREFIX and URL=PREFIX', () => {
    assert.deepEqual(parseBackendFlag('everything'), {name: 'everything', workload: 'everything'})
    assert.deepEqual(parseBackendFlag('everything=ev'), {
      name: 'everything',
      prefix: 'ev',
      workload: 'everything',
    })
    assert.deepEqual(parseBackendFlag('https://h.example/mcp=remote'), {
      name: 'remote',
      prefix: 'remote',
      url: 'https://h.example/mcp',
    })
  })

  it('refuses what would be ambiguous or unsafe, saying which value and why', () => {
    const usage = (value: string, pattern: RegExp) =>
      assert.throws(
        () => parseBackendFlag(value),
        (err: unknown) =>
          isToolgateError(err, 'ERR_USAGE') &&
          (err as Error).message.includes(`--backend "${value}"`) &&
          pattern.test((err as Error).message),
      )
    usage('https://h.example/mcp', /needs a prefix/)
    // `?a=b` would read as the prefix b; a query (often a key) goes in the config file instead.
    usage('https://h.example/mcp?a=b', /a URL with a query goes in the config file/)
    usage('https://h.example/mcp?key=k=remote', /a URL with a query goes in the config file/)
    usage('ev=my_prefix', /no '_' or '\+'/)
    usage('ev=a+b', /no '_' or '\+'/)
    usage('Bad Name', /workload name/)
    usage('../etc', /workload name/)
    usage('ftp://h.example/x=p', /must be http\(s\)/)
    usage('https://user:pw@h.example/mcp=p', /credentials in the URL/)
  })
})

describe('gateway config', () => {
  it('merges flags and file sections: flags first, the file adds its own backends', () => {
    const config = validateGatewayConfig(
      {
        pageSize: 50,
        backends: {
          ev: {prefix: 'e', tools: {deny: ['toggle-*']}},
          remote: {
            url: 'https://r.example/mcp',
            auth: {'remote-auth-bearer-token-file': 'r.token'},
          },
        },
      },
      [parseBackendFlag('ev'), parseBackendFlag('https://w.example/mcp=web')],
      where,
    )
    assert.equal(config.pageSize, 50)
    assert.deepEqual(
      config.backends.map((b) => [b.name, b.prefix, b.workload ?? b.url]),
      [
        ['ev', 'e', 'ev'],
        ['web', 'web', 'https://w.example/mcp'],
        ['remote', 'remote', 'https://r.example/mcp'],
      ],
    )
    // Relative token files are the config file's neighbours, not the current directory's.
    assert.equal(config.backends[2]!.auth['remote-auth-bearer-token-file'], '/etc/gw/r.token')
    assert.equal(
      validateGatewayConfig({}, [parseBackendFlag('a')], where).pageSize,
      DEFAULT_PAGE_SIZE,
    )
  })

  it('reports every problem with its path, all at once', () => {
    assert.throws(
      () =>
        validateGatewayConfig(
          {
            pagesize: 3,
            backends: {
              a: {url: 'https://a.example/mcp', workload: 'a'},
              b: {prefix: 'a'},
              c: {auth: {'remote-auth-bearer-token-file': 't'}},
              d: {url: 'https://d.example', auth: {'remote-auth-bearer-token': 'inline-secret'}},
              e: {tools: {allow: 'x', override: {x: {name: 'has space'}}}},
            },
          },
          [],
          where,
        ),
      (err: unknown) => {
        const m = (err as Error).message
        for (const expected of [
          'pagesize: unknown key',
          'backends.a: give url or workload, not both',
          'backends.b.prefix: "a" is also the prefix of a',
          'backends.c.auth: only for url backends',
          'backends.d.auth.remote-auth-bearer-token: unknown key',
          'backends.e.tools.allow',
          'backends.e.tools.override.x.name',
        ])
          assert.ok(m.includes(expected), `${expected} missing from:\n${m}`)
        assert.ok(!m.includes('inline-secret'), 'a secret value is never repeated')
        return true
      },
    )
  })

  it('refuses no backends, a name given twice, prefixes equal but for case, token passthrough', () => {
    invalid({}, [], /no backend/)
    invalid({}, ['ev', 'ev'], /given twice/)
    invalid({backends: {Ev: {}}}, ['ev'], /prefixes must differ/)
    invalid(
      {backends: {r: {url: 'https://r.example', auth: {'remote-forward-incoming-token': true}}}},
      [],
      /unknown key/,
    )
    invalid({backends: {ev: {url: 'https://x.example'}}}, ['https://y.example=ev'], /differs from/)
    // A bare name on the command line may name a section of the file, whatever it describes.
    const named = validateGatewayConfig(
      {backends: {gh: {url: 'https://x.example/mcp'}}},
      [parseBackendFlag('gh')],
      where,
    )
    assert.equal(named.backends[0]!.url, 'https://x.example/mcp')
    assert.equal(named.backends[0]!.workload, undefined)
  })

  it('reads YAML or JSON files and names a missing one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-gw-config-'))
    try {
      await writeFile(join(dir, 'g.yaml'), 'backends:\n  ev: {prefix: e}\n')
      await writeFile(join(dir, 'g.json'), '{"backends": {"ev": {"prefix": "j"}}}')
      await writeFile(join(dir, 'dup.yaml'), 'backends:\n  ev: {}\n  ev: {}\n')
      assert.equal(loadGatewayConfig([], join(dir, 'g.yaml')).backends[0]!.prefix, 'e')
      assert.equal(loadGatewayConfig([], join(dir, 'g.json')).backends[0]!.prefix, 'j')
      assert.throws(() => loadGatewayConfig([], join(dir, 'dup.yaml')), /not valid YAML/)
      assert.throws(
        () => loadGatewayConfig([], join(dir, 'none.yaml')),
        (err: unknown) => isToolgateError(err, 'ERR_CONFIG_NOT_FOUND'),
      )
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })
})

describe('tool shaping', () => {
  let shaping: ReturnType<typeof validateGatewayConfig>['backends'][number]['tools']
  before(() => {
    shaping = validateGatewayConfig(
      {
        backends: {
          ev: {
            tools: {
              allow: ['get-*', 'echo', 'say', 'del?'],
              deny: ['get-env'],
              override: {echo: {name: 'say', description: 'Says it'}},
            },
          },
        },
      },
      [],
      where,
    ).backends[0]!.tools
  })
  after(() => undefined)

  it('allow and deny globs decide what exists; deny wins', () => {
    assert.equal(exposedToolName(shaping, 'get-sum'), 'get-sum')
    assert.equal(exposedToolName(shaping, 'get-env'), undefined)
    assert.equal(exposedToolName(shaping, 'toggle'), undefined)
    assert.equal(exposedToolName(shaping, 'del1'), 'del1')
    assert.equal(exposedToolName(shaping, 'del12'), undefined)
    // Glob metacharacters of regular expressions are literal.
    assert.equal(exposedToolName(shaping, 'getXsum'), undefined)
  })

  it('a rename takes the new name; the old name and a tool that had the new name are gone', () => {
    assert.equal(exposedToolName(shaping, 'echo'), 'say')
    assert.equal(originalToolName(shaping, 'say'), 'echo')
    assert.equal(originalToolName(shaping, 'echo'), undefined)
    // The backend's own `say` gives way to the rename that was asked for.
    assert.equal(exposedToolName(shaping, 'say'), undefined)
    assert.equal(originalToolName(shaping, 'get-env'), undefined)
    assert.equal(originalToolName(shaping, 'get-sum'), 'get-sum')
  })
})
