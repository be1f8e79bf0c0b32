/**
 * `toolgate client` edits other programs' config files (issue 33). Golden files pin each client's
 * entry shape and the in-place edit of a file with comments, trailing commas, other servers and
 * unknown keys; the paths are pinned for Linux, macOS and Windows layouts. Then what must never
 * happen: a broken file changed, a user's entry replaced, a backup overwritten, two writers at
 * once, a symlink replaced, a mode loosened. `UPDATE_GOLDEN=1` rewrites the golden files.
 */
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {CLIENTS, clientById, type ClientContext} from '../../../src/lib/clients/catalog.ts'
import {addToClients, removeFromClients} from '../../../src/lib/clients/client-ops.ts'
import {backupPath} from '../../../src/lib/clients/config-file.ts'
import {editEntry} from '../../../src/lib/clients/edit-entry.ts'
import {readRegistrations} from '../../../src/lib/clients/registrations.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'

const GOLDEN = 'test/fixtures/clients/golden'
const update = process.env.UPDATE_GOLDEN === '1'

function golden(name: string, actual: string): void {
  const file = join(GOLDEN, name)
  if (update) {
    mkdirSync(GOLDEN, {recursive: true})
    writeFileSync(file, actual)
  }
  assert.equal(actual, readFileSync(file, 'utf8'), `golden file ${file}`)
}

const STDIO = {
  via: 'stdio' as const,
  command: '/opt/toolgate/toolgate',
  args: ['proxy', 'stdio', 'ev'],
  env: {XDG_STATE_HOME: '/home/u/.local/state'},
}

/** What a user's file looks like: comments, trailing commas, another server, unknown keys. */
const USER_JSONC = (key: string) => `// my MCP servers
{
    "${key}": {
        // the team's server
        "other": {"command": "other-mcp", "args": ["--fast",],},
    },
    "unknownSetting": [1, 2, 3,], /* keep me */
}
`

const USER_TOML = `# Codex settings
model = "o4"

[mcp_servers.other] # by hand
command = "other-mcp"

# projects follow
[projects."/home/u/x"]
trust_level = "trusted"
`

let dir: string
before(async () => (dir = await mkdtemp(join(tmpdir(), 'toolgate-clients-'))))
after(async () => rm(dir, {recursive: true, force: true}))

describe('client config paths on Linux, macOS and Windows', () => {
  it('puts each client where its documentation says', () => {
    const layouts: Record<string, ClientContext> = {
      linux: {platform: 'linux', home: '/home/u', env: {}, cwd: '/home/u/proj'},
      darwin: {platform: 'darwin', home: '/Users/u', env: {}, cwd: '/Users/u/proj'},
      win32: {
        platform: 'win32',
        home: 'C:\\Users\\u',
        env: {APPDATA: 'C:\\Users\\u\\AppData\\Roaming'},
        cwd: 'C:\\Users\\u\\proj',
      },
    }
    const table: Record<string, Record<string, Record<string, string | null>>> = {}
    for (const [os, ctx] of Object.entries(layouts))
      for (const c of CLIENTS)
        (table[c.id] ??= {})[os] = {
          user: c.file('user', ctx) ?? null,
          project: c.file('project', ctx) ?? null,
        }
    golden('paths.json', JSON.stringify(table, null, 2) + '\n')
    // The environment variables the clients themselves honour move their files.
    const moved: ClientContext = {
      platform: 'linux',
      home: '/home/u',
      env: {
        CLAUDE_CONFIG_DIR: '/cfg/claude',
        CODEX_HOME: '/cfg/codex',
        XDG_CONFIG_HOME: '/cfg/xdg',
      },
      cwd: '/p',
    }
    assert.equal(clientById('claude-code')!.file('user', moved), '/cfg/claude/.claude.json')
    assert.equal(clientById('codex')!.file('user', moved), '/cfg/codex/config.toml')
    assert.equal(clientById('vscode')!.file('user', moved), '/cfg/xdg/Code/User/mcp.json')
  })
})

describe('entries written into existing files', () => {
  for (const client of CLIENTS) {
    it(`${client.id}: HTTP, then stdio, then removed — the user's text untouched`, async () => {
      const file = join(dir, `${client.id}.${client.format}`)
      const original = client.format === 'toml' ? USER_TOML : USER_JSONC(client.key[0]!)
      writeFileSync(file, original)
      const http = client.http('http://127.0.0.1:41234/mcp', false)
      const steps: string[] = []
      if (http) {
        assert.equal((await editEntry(client, file, 'ev', http, {owned: true})).change, 'added')
        steps.push(readFileSync(file, 'utf8'))
      }
      const stdio = client.stdio(STDIO)
      const second = await editEntry(client, file, 'ev', stdio, {owned: true})
      assert.equal(second.change, http ? 'updated' : 'added')
      steps.push(readFileSync(file, 'utf8'))
      golden(`${client.id}.${client.format}`, steps.join('\n----- then -----\n'))
      assert.equal(
        (await editEntry(client, file, 'ev', undefined, {owned: true})).change,
        'removed',
      )
      const removed = readFileSync(file, 'utf8')
      // Every comment and unknown key of the user's is still there.
      const kept =
        client.format === 'toml'
          ? ['# Codex settings', '# by hand', '# projects follow', 'trust_level']
          : [
              '// my MCP servers',
              '// the team',
              '"args": ["--fast",],},',
              '[1, 2, 3,], /* keep me */',
            ]
      for (const keep of kept) assert.ok(removed.includes(keep), `${keep} kept:\n${removed}`)
      assert.ok(!removed.includes('41234') && !removed.includes('/opt/toolgate'), removed)
      // Only our entry's own text differs from what the user had.
      if (client.format === 'json') assert.equal(removed.replace(/\n\s*\n/g, '\n'), original)
      // The backup is the user's own file, taken before the first change, never overwritten.
      assert.equal(readFileSync(backupPath(file), 'utf8'), original)
    })
  }

  it('creates a missing file (and its folder) private, and adds twice without a change', async () => {
    const file = join(dir, 'new', '.gemini', 'settings.json')
    const gemini = clientById('gemini')!
    const value = gemini.http('http://127.0.0.1:1/mcp', false)!
    assert.equal((await editEntry(gemini, file, 'ev', value, {owned: false})).change, 'added')
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), {
      mcpServers: {ev: {httpUrl: 'http://127.0.0.1:1/mcp'}},
    })
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.ok(!existsSync(backupPath(file)), 'no backup of a file that did not exist')
    const before = statSync(file).mtimeMs
    assert.equal((await editEntry(gemini, file, 'ev', value, {owned: false})).change, 'unchanged')
    assert.equal(statSync(file).mtimeMs, before)
  })

  it("keeps the file's mode and writes through a symlink", async () => {
    const real = join(dir, 'dotfiles-settings.json')
    const link = join(dir, 'linked-settings.json')
    writeFileSync(real, '{"theme": "dark"}\n', {mode: 0o644})
    symlinkSync(real, link)
    const gemini = clientById('gemini')!
    const r = await editEntry(gemini, link, 'ev', {httpUrl: 'http://x/mcp'}, {owned: false})
    assert.equal(r.path, real)
    assert.ok(lstatSync(link).isSymbolicLink(), 'the symlink is still a symlink')
    assert.equal(statSync(real).mode & 0o777, 0o644)
    assert.deepEqual(JSON.parse(readFileSync(real, 'utf8')), {
      theme: 'dark',
      mcpServers: {ev: {httpUrl: 'http://x/mcp'}},
    })
  })
})

describe('what is refused, and the file left alone', () => {
  const refuses = async (
    client: string,
    text: string,
    pattern: RegExp,
    value: Record<string, unknown> | undefined = {url: 'http://x/mcp'},
  ) => {
    const file = join(dir, `bad-${Math.random().toString(36).slice(2)}`)
    writeFileSync(file, text)
    await assert.rejects(
      editEntry(clientById(client)!, file, 'ev', value, {owned: true}),
      (err: Error) => isToolgateError(err, 'ERR_CONFIG_INVALID') && pattern.test(err.message),
    )
    assert.equal(readFileSync(file, 'utf8'), text, 'unchanged')
    assert.ok(!existsSync(backupPath(file)), 'no backup either')
  }

  it('a JSON syntax error, with file, line and column', () =>
    refuses(
      'cursor',
      '{\n  "mcpServers": {\n    "a": {"url": "x"}\n    "b": 1\n  }\n}\n',
      /:4:5: CommaExpected/,
    ))
  it('duplicate keys (which one a client reads is its own business)', () =>
    refuses('vscode', '{"servers": {}, "servers": {"ev": {}}}', /:1:17: duplicate key "servers"/))
  it('a servers key that is not an object', () =>
    refuses('claude-code', '{"mcpServers": []}', /"mcpServers" is not an object/))
  it('a file that is not an object', () => refuses('windsurf', '[1]', /not a JSON object/))
  it('a TOML syntax error, with line and column', () =>
    refuses('codex', 'model = "o4"\n[mcp_servers.ev\n', /:2:\d+: /))
  it('a TOML entry written inline rather than as its own table', () =>
    refuses('codex', 'mcp_servers = { ev = { url = "http://old/mcp" } }\n', /edit it by hand/))
  it('a TOML entry written as dotted keys', () =>
    refuses('codex', '[mcp_servers]\nev.url = "http://old/mcp"\n', /edit it by hand/))

  it('an entry of the same name toolgate did not write (unless --force)', async () => {
    const ctxHome = join(dir, 'home-conflict')
    const ctx: ClientContext = {platform: 'linux', home: ctxHome, env: {}, cwd: ctxHome}
    const env = {XDG_STATE_HOME: join(ctxHome, 'state'), HOME: ctxHome}
    const file = clientById('claude-code')!.file('user', ctx)!
    mkdirSync(ctxHome, {recursive: true})
    const mine = '{"mcpServers": {"mcp-example-com": {"type": "stdio", "command": "mine"}}}\n'
    writeFileSync(file, mine)
    const options = {
      target: 'https://mcp.example.com/mcp',
      clients: [clientById('claude-code')!],
      scope: 'user' as const,
      ctx,
      env,
    }
    const [refused] = await addToClients(options)
    assert.equal(refused!.change, 'failed')
    assert.equal(refused!.error?.code, 'ERR_CONFLICT')
    assert.match(
      refused!.error!.message,
      /toolgate did not write; choose another --name, or --force/,
    )
    assert.equal(readFileSync(file, 'utf8'), mine)
    const [forced] = await addToClients({...options, force: true})
    assert.equal(forced!.change, 'updated')
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).mcpServers['mcp-example-com'], {
      type: 'http',
      url: 'https://mcp.example.com/mcp',
    })
    // Now toolgate owns it: remove takes it out, and forgets it.
    const removed = await removeFromClients({name: 'mcp-example-com', env})
    assert.deepEqual(
      removed.map((r) => r.change),
      ['removed'],
    )
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).mcpServers, {})
    assert.deepEqual(await readRegistrations(env), [])
  })

  it('a URL with credentials in it', async () => {
    await assert.rejects(
      addToClients({
        target: 'https://user:pw@mcp.example.com/mcp',
        clients: [clientById('cursor')!],
        scope: 'user',
        ctx: {platform: 'linux', home: dir, env: {}, cwd: dir},
        env: {XDG_STATE_HOME: join(dir, 'state-cred')},
      }),
      (err: Error) =>
        /not the place for credentials/.test(err.message) && !err.message.includes('pw'),
    )
  })
})

describe('one writer at a time', () => {
  it('waits for a live lock holder, then gives up with a clear error', async () => {
    const file = join(dir, 'locked.json')
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 20000)'])
    try {
      writeFileSync(`${file}.toolgate-lock`, String(holder.pid))
      const started = Date.now()
      await assert.rejects(
        editEntry(clientById('cursor')!, file, 'ev', {url: 'http://x'}, {owned: true}),
        (err: Error) =>
          isToolgateError(err, 'ERR_CONFLICT') &&
          /being changed by another toolgate/.test(err.message),
      )
      assert.ok(Date.now() - started >= 4_500, 'it waited for the holder')
      assert.ok(!existsSync(file), 'nothing written')
    } finally {
      holder.kill()
    }
  })

  it('takes over the lock of a toolgate that died holding it', async () => {
    const file = join(dir, 'stale.json')
    const dead = spawn(process.execPath, ['-e', '0'])
    await new Promise((r) => dead.once('exit', r))
    writeFileSync(`${file}.toolgate-lock`, String(dead.pid))
    const r = await editEntry(clientById('cursor')!, file, 'ev', {url: 'http://x'}, {owned: true})
    assert.equal(r.change, 'added')
    assert.ok(!existsSync(`${file}.toolgate-lock`), 'lock released')
  })

  it('two writers at once both land, neither lost', async () => {
    const file = join(dir, 'race.json')
    const cursor = clientById('cursor')!
    await Promise.all(
      Array.from({length: 8}, (_, i) =>
        editEntry(cursor, file, `s${i}`, {url: `http://x/${i}`}, {owned: true}),
      ),
    )
    assert.equal(Object.keys(JSON.parse(readFileSync(file, 'utf8')).mcpServers).length, 8)
  })
})

describe('comments around an entry stay where they were (review of issue 33)', () => {
  const cursor = () => clientById('cursor')!
  const roundTrip = async (name: string, text: string, entry: string) => {
    const file = join(dir, `c-${name}.json`)
    writeFileSync(file, text)
    await editEntry(cursor(), file, entry, undefined, {owned: true})
    return readFileSync(file, 'utf8')
  }

  it('removing a middle, a first or a last entry leaves the neighbours and their comments', async () => {
    const text = `{
  "mcpServers": {
    "a": {"url": "http://a"}, // keep: about a
    // about b
    "b": {"url": "http://b"},
    // about c
    "c": {"url": "http://c"} // keep: about c
  }
}
`
    assert.equal(
      await roundTrip('mid', text, 'b'),
      text.replace('    "b": {"url": "http://b"},\n', ''),
    )
    assert.equal(
      await roundTrip('first', text, 'a'),
      text.replace('    "a": {"url": "http://a"}, // keep: about a\n', ''),
    )
    assert.equal(
      await roundTrip('last', text, 'c'),
      text
        .replace('    "c": {"url": "http://c"} // keep: about c\n', '')
        .replace('"b": {"url": "http://b"},', '"b": {"url": "http://b"}'),
    )
  })

  it('adding keeps a comment in an empty object and a comment after the last entry', async () => {
    const file = join(dir, 'c-add.json')
    writeFileSync(file, '{"mcpServers": { /* add servers here */ }}\n')
    await editEntry(cursor(), file, 'ev', {url: 'http://x'}, {owned: true})
    const once = readFileSync(file, 'utf8')
    assert.ok(once.includes('/* add servers here */'), once)
    const file2 = join(dir, 'c-add2.json')
    writeFileSync(file2, '{\n  "mcpServers": {\n    "a": {"url": "http://a"} // about a\n  }\n}\n')
    await editEntry(cursor(), file2, 'ev', {url: 'http://x'}, {owned: true})
    const added = readFileSync(file2, 'utf8')
    assert.ok(added.includes('"a": {"url": "http://a"}, // about a\n    "ev": {'), added)
    await editEntry(cursor(), file2, 'ev', undefined, {owned: true})
    assert.equal(
      readFileSync(file2, 'utf8'),
      '{\n  "mcpServers": {\n    "a": {"url": "http://a"} // about a\n  }\n}\n',
    )
  })

  it('names that are Object.prototype properties are ordinary names', async () => {
    for (const client of [cursor(), clientById('codex')!]) {
      const file = join(dir, `proto.${client.format}`)
      assert.equal(
        (await editEntry(client, file, 'constructor', {url: 'http://x/mcp'}, {owned: false}))
          .change,
        'added',
      )
      assert.equal(
        (await editEntry(client, file, 'toString', undefined, {owned: false})).change,
        'absent',
      )
      assert.ok(!existsSync(backupPath(file)) || client.format === 'toml')
    }
  })

  it('a dangling symlink is written through (the link kept), and is one file for the records', async () => {
    const target = join(dir, 'dotfiles', 'mcp.json')
    mkdirSync(join(dir, 'dotfiles'), {recursive: true})
    const link = join(dir, 'dangling-mcp.json')
    symlinkSync(target, link)
    const r = await editEntry(cursor(), link, 'ev', {url: 'http://x'}, {owned: false})
    assert.equal(r.path, target)
    assert.ok(lstatSync(link).isSymbolicLink())
    assert.deepEqual(JSON.parse(readFileSync(target, 'utf8')), {
      mcpServers: {ev: {url: 'http://x'}},
    })
  })

  it('a stale lock taken over by many waiters at once still lets one writer in at a time', async () => {
    const file = join(dir, 'stale-race.json')
    const dead = spawn(process.execPath, ['-e', '0'])
    await new Promise((r) => dead.once('exit', r))
    writeFileSync(`${file}.toolgate-lock`, `${dead.pid} x`)
    await Promise.all(
      Array.from({length: 8}, (_, i) =>
        editEntry(cursor(), file, `s${i}`, {url: `http://x/${i}`}, {owned: true}),
      ),
    )
    assert.equal(Object.keys(JSON.parse(readFileSync(file, 'utf8')).mcpServers).length, 8)
    assert.ok(!existsSync(`${file}.toolgate-lock`))
  })
})

describe('rm --unregister removes the workload’s own entries only', () => {
  it('an entry named like the workload but written for another workload stays', async () => {
    const {updateRegistrations} = await import('../../../src/lib/clients/registrations.ts')
    const env = {XDG_STATE_HOME: join(dir, 'unreg-state')}
    const file = join(dir, 'unreg-cursor.json')
    const cursor = clientById('cursor')!
    await editEntry(cursor, file, 'gh-old', {url: 'http://a/mcp'}, {owned: true})
    await editEntry(cursor, file, 'github', {url: 'http://b/mcp'}, {owned: true})
    await updateRegistrations(env, () => [
      {client: 'cursor', scope: 'user', file, entry: 'gh-old', workload: 'github', via: 'http'},
      {client: 'cursor', scope: 'user', file, entry: 'github', workload: 'github-v2', via: 'http'},
    ])
    const removed = await removeFromClients({name: 'github', by: 'workload', env})
    assert.deepEqual(
      removed.map((r) => [r.entry, r.change]),
      [['gh-old', 'removed']],
    )
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(file, 'utf8')).mcpServers), ['github'])
  })
})
