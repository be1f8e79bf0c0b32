import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  HEADER_LEN,
  decryptFile,
  deriveKeys,
  encryptFile,
  newSalt,
  parseFile,
  type KdfParams,
} from '../../../src/lib/secrets/file-format.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'

// Cheap scrypt parameters keep these in-process tests fast; the CLI tests use the real defaults.
const KDF: KdfParams = {log2N: 10, r: 8, p: 1}
const FILE = '/tmp/secrets.enc'

async function sealed(
  password = 'correct horse',
  secrets: Record<string, string> = {api: 's3cr3t-value'},
) {
  const salt = newSalt()
  const keys = await deriveKeys(password, salt, KDF)
  return encryptFile(secrets, keys, salt, KDF)
}

async function open(bytes: Buffer, password = 'correct horse') {
  const parsed = parseFile(bytes, FILE)
  return decryptFile(parsed, await deriveKeys(password, parsed.salt, parsed.kdf), FILE)
}

describe('encrypted secrets file format', () => {
  it('round-trips secrets with the right password', async () => {
    const bytes = await sealed('correct horse', {a: '1', b: 'two\nlines'})
    assert.deepEqual({...(await open(bytes))}, {a: '1', b: 'two\nlines'})
  })

  it('contains neither the value nor the name in plain text', async () => {
    const bytes = await sealed('correct horse', {'my-api-name': 'PLAINTEXT-VALUE-42'})
    assert.equal(bytes.includes(Buffer.from('PLAINTEXT-VALUE-42')), false)
    assert.equal(bytes.includes(Buffer.from('my-api-name')), false)
  })

  it('uses a fresh nonce on every write, so equal content gives different bytes', async () => {
    const salt = newSalt()
    const keys = await deriveKeys('pw', salt, KDF)
    const a = encryptFile({x: 'y'}, keys, salt, KDF)
    const b = encryptFile({x: 'y'}, keys, salt, KDF)
    assert.notDeepEqual(a, b)
  })

  it('records the KDF parameters in the header and reads them back', async () => {
    const parsed = parseFile(await sealed(), FILE)
    assert.deepEqual(parsed.kdf, KDF)
  })

  it('reports a wrong password as ERR_SECRET_LOCKED, not as damage', async () => {
    const bytes = await sealed('correct horse')
    await assert.rejects(open(bytes, 'battery staple'), (err) =>
      isToolgateError(err, 'ERR_SECRET_LOCKED'),
    )
  })

  // Every region of the file: a single flipped bit is always caught, and as damage.
  const regions: Array<[string, (len: number) => number]> = [
    ['magic', () => 0],
    ['version', () => 8],
    ['kdf parameters', () => 10],
    ['salt', () => 20],
    ['password verifier', () => 40],
    ['nonce', () => 70],
    ['header checksum', () => 80],
    ['ciphertext', () => HEADER_LEN + 1],
    ['authentication tag', (len) => len - 1],
  ]
  for (const [region, offset] of regions) {
    it(`reports a flipped bit in the ${region} as ERR_SECRET_CORRUPT`, async () => {
      const bytes = Buffer.from(await sealed())
      const at = offset(bytes.length)
      bytes[at] = (bytes[at] as number) ^ 0x01
      await assert.rejects(open(bytes), (err) => isToolgateError(err, 'ERR_SECRET_CORRUPT'))
    })
  }

  it('reports a truncated file as ERR_SECRET_CORRUPT', async () => {
    const bytes = await sealed()
    await assert.rejects(open(bytes.subarray(0, 50)), (err) =>
      isToolgateError(err, 'ERR_SECRET_CORRUPT'),
    )
  })

  it('names the file but never a secret in its errors', async () => {
    const bytes = Buffer.from(await sealed('correct horse', {k: 'VALUE-NOT-IN-ERRORS'}))
    bytes[HEADER_LEN + 2] = (bytes[HEADER_LEN + 2] as number) ^ 0xff
    const err = await open(bytes).catch((e: Error) => e)
    assert.ok(err instanceof Error)
    assert.match(err.message, /secrets\.enc/)
    assert.doesNotMatch(err.message, /VALUE-NOT-IN-ERRORS|correct horse/)
  })
})
