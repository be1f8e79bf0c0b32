import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {fileURLToPath, pathToFileURL} from 'node:url'

const root = join(fileURLToPath(import.meta.url), '..', '..', '..')

/** Every module URL resolved while importing `file`, from a fresh Node process (module resolve hook). */
function modulesLoadedBy(file: string): string[] {
  const script = `
    import {registerHooks} from 'node:module'
    const seen = []
    registerHooks({resolve(spec, ctx, next) { const r = next(spec, ctx); seen.push(r.url); return r }})
    await import(${JSON.stringify(pathToFileURL(file).href)})
    process.stdout.write(JSON.stringify(seen))
  `
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as string[]
}

describe('toolgate proxy command module', () => {
  it('does not load the proxy server, Cedar, the secrets store or the keyring until it runs', () => {
    const loaded = modulesLoadedBy(join(root, 'src', 'commands', 'proxy.ts'))
    assert.ok(
      loaded.some((u) => u.endsWith('/src/commands/proxy.ts')),
      'the hook saw the command itself',
    )
    const eager = loaded.filter((u) =>
      [
        '/src/lib/proxy/proxy-server.ts',
        '/src/lib/proxy/options.ts',
        '/src/lib/authz/',
        '/src/lib/secrets/index.ts',
        '@cedar-policy',
        '@napi-rs/keyring',
      ].some((p) => u.includes(p)),
    )
    assert.deepEqual(eager, [])
  })

  it('the whole command map loads no domain library until a command runs (help and --version stay fast)', () => {
    const loaded = modulesLoadedBy(join(root, 'src', 'index.ts'))
    assert.ok(
      loaded.some((u) => u.endsWith('/src/commands/serve.ts')),
      'the hook saw the serve command',
    )
    const eager = loaded.filter((u) =>
      [
        '/src/lib/proxy/proxy-server.ts',
        '/src/lib/server/',
        '/src/lib/registry/',
        '/src/lib/oauth/index.ts',
        '/src/lib/oauth/token-source.ts',
        '/src/lib/authz/',
        '/src/lib/secrets/index.ts',
        '/src/lib/auth/',
        '@cedar-policy',
        '@napi-rs/keyring',
        'node_modules/jose/',
        'node_modules/oauth4webapi/',
        'node_modules/undici/',
        'node:sqlite',
      ].some((p) => u.includes(p)),
    )
    assert.deepEqual(eager, [])
  })
})
