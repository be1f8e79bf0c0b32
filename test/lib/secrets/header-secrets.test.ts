import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {
  openSecretStore,
  overrideForwardHeaders,
  resolveForwardHeaderSecrets,
} from '../../../src/lib/secrets/index.ts'

// The environment provider is the real provider for containers; it makes these tests need no files.
const store = () =>
  openSecretStore({
    provider: 'environment',
    env: {
      TOOLGATE_SECRET_API_KEY: 'HEADER-CANARY',
      TOOLGATE_SECRET_BAD: 'a\r\nInjected: 1',
      TOOLGATE_SECRET_TABBED: 'a\tb',
    },
  })

describe('--remote-forward-headers-secret resolution', () => {
  it('resolves Name=secret-name to a lower-case header with the secret value', async () => {
    assert.deepEqual(await resolveForwardHeaderSecrets(['X-Api-Key=api-key'], await store()), [
      {name: 'x-api-key', value: 'HEADER-CANARY'},
    ])
  })

  it('overrides a plaintext header of the same name, case-insensitively', () => {
    const merged = overrideForwardHeaders(
      [
        {name: 'x-api-key', value: 'plain'},
        {name: 'x-other', value: 'o'},
      ],
      [{name: 'x-api-key', value: 'from-secret'}],
    )
    assert.deepEqual(merged, [
      {name: 'x-api-key', value: 'from-secret'},
      {name: 'x-other', value: 'o'},
    ])
  })

  it('names the header and the secret when the secret is missing', async () => {
    await assert.rejects(
      resolveForwardHeaderSecrets(['X-Api-Key=missing-one'], await store()),
      (err) =>
        isToolgateError(err, 'ERR_SECRET_NOT_FOUND') && /X-Api-Key=missing-one/.test(err.message),
    )
  })

  const refused: Array<[string, string]> = [
    ['no equals sign', 'X-Api-Key'],
    ['an empty secret name', 'X-Api-Key='],
    ['an invalid header name', 'X Api=api-key'],
    ['a proxy-owned header', 'Host=api-key'],
    ['a hop-by-hop header', 'Connection=api-key'],
    ['an X-Forwarded header', 'X-Forwarded-For=api-key'],
  ]
  for (const [label, spec] of refused) {
    it(`refuses ${label} at startup`, async () => {
      await assert.rejects(resolveForwardHeaderSecrets([spec], await store()), (err) =>
        isToolgateError(err, 'ERR_USAGE'),
      )
    })
  }

  it('refuses a value with CR/LF without showing it', async () => {
    const err = await resolveForwardHeaderSecrets(['X-Bad=bad'], await store()).catch(
      (e: Error) => e,
    )
    assert.ok(isToolgateError(err, 'ERR_USAGE'))
    assert.doesNotMatch(err.message, /Injected/)
  })

  it('allows a horizontal tab inside a value (RFC 9110 §5.5)', async () => {
    assert.deepEqual(await resolveForwardHeaderSecrets(['X-T=tabbed'], await store()), [
      {name: 'x-t', value: 'a\tb'},
    ])
  })
})
