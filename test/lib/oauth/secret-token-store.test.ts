import assert from 'node:assert/strict'
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {secretTokenStore} from '../../../src/lib/oauth/secret-token-store.ts'
import {storeNames} from '../../../src/lib/oauth/token-store.ts'
import {openSecretStore} from '../../../src/lib/secrets/index.ts'

const names = storeNames('https://mcp.example.com/mcp', 'https://idp.example.com')
const REFRESH = 'refresh-token-value-that-must-stay-secret'

describe('remote login state in the secrets store', () => {
  it('uses reserved names, hidden from a plain listing, keyed by target and issuer', () => {
    assert.match(names.refresh, /^__toolgate\/oauth\/[0-9a-f]{32}\/refresh$/)
    assert.notEqual(
      storeNames('https://other.example.com/mcp', 'https://idp.example.com').refresh,
      names.refresh,
    )
    assert.notEqual(
      storeNames('https://mcp.example.com/mcp', 'https://idp2.example.com').refresh,
      names.refresh,
    )
  })

  it('persists in the encrypted store (a second open sees it) and never in clear on disk', async () => {
    const home = await mkdtemp(join(tmpdir(), 'toolgate-oauth-store-'))
    try {
      const paths = {
        config: join(home, 'c'),
        data: join(home, 'd'),
        state: join(home, 's'),
        cache: join(home, 'k'),
      }
      const open = () =>
        openSecretStore({
          paths,
          env: {TOOLGATE_SECRETS_PASSWORD: 'password'},
          keyring: false,
          provider: 'encrypted',
          kdf: {log2N: 10, r: 8, p: 1},
        })
      const store = await open()
      await secretTokenStore(store).set(names.refresh, REFRESH)
      assert.deepEqual(await store.list(), [])
      assert.equal(await secretTokenStore(await open()).get(names.refresh), REFRESH)
      const raw = await readFile(store.file as string)
      assert.equal(raw.includes(Buffer.from(REFRESH)), false)
      await secretTokenStore(await open()).delete(names.refresh)
      assert.equal(await (await open()).get(names.refresh, {system: true}), undefined)
    } finally {
      await rm(home, {recursive: true, force: true})
    }
  })

  it('keeps the login in memory with one warning when the store is read-only', async () => {
    const logger = createMemoryLogger()
    const store = secretTokenStore(
      await openSecretStore({env: {}, provider: 'environment'}),
      logger,
    )
    await store.set(names.refresh, REFRESH)
    await store.set(names.client, '{}')
    assert.equal(await store.get(names.refresh), REFRESH)
    assert.equal(logger.lines.length, 1)
    assert.match(logger.lines[0] as string, /kept in memory only and will not survive a restart/)
    assert.ok(!logger.lines[0]?.includes(REFRESH))
  })
})
