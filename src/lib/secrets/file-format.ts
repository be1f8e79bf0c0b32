import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto'
import {ToolgateError} from '../errors.ts'

/**
 * The encrypted secrets file, format version 1 (all integers unsigned bytes):
 *
 *   0  magic "TGSECRET"          16 salt (16)          64 nonce (12, fresh on every write)
 *   8  version = 1               32 verifier (32)      76 checksum = SHA-256(bytes 0..75)[0..16]
 *   9  kdf = 1 (scrypt)                                92 AES-256-GCM ciphertext ‖ tag (16)
 *  10  log2(N), 11 r, 12 p, 13..15 zero
 *
 * scrypt(password, salt) yields 64 bytes: an AES key and a MAC key. The verifier is
 * HMAC-SHA256(MAC key, bytes 0..31), so a wrong password is told apart from a damaged file; the
 * unkeyed checksum catches damage to the header itself (which would otherwise look like a wrong
 * password); GCM (NIST SP 800-38D) authenticates the body with the whole header as additional data.
 * The plaintext is JSON: {"v":1,"secrets":{name: value}}.
 */
const MAGIC = Buffer.from('TGSECRET', 'ascii')
const VERSION = 1
const KDF_SCRYPT = 1
const SALT_LEN = 16
const NONCE_LEN = 12
const TAG_LEN = 16
const OFF_SALT = 16
const OFF_VERIFIER = 32
const OFF_NONCE = 64
const OFF_CHECKSUM = 76
export const HEADER_LEN = 92

export interface KdfParams {
  log2N: number
  r: number
  p: number
}

// OWASP Password Storage Cheat Sheet minimum for scrypt: N=2^17, r=8, p=1 (128 MiB, ~0.35 s here).
export const DEFAULT_KDF: KdfParams = {log2N: 17, r: 8, p: 1}

// Bounds for parameters read from a file, so a crafted header cannot ask for gigabytes of memory.
const KDF_BOUNDS = {log2N: [10, 22], r: [1, 32], p: [1, 16]} as const

export interface DerivedKeys {
  encKey: Buffer
  macKey: Buffer
}

export interface ParsedFile {
  kdf: KdfParams
  salt: Buffer
  verifier: Buffer
  nonce: Buffer
  header: Buffer
  body: Buffer
}

export type SecretMap = Record<string, string>

function corrupt(file: string, why: string): ToolgateError {
  return new ToolgateError(
    'ERR_SECRET_CORRUPT',
    `secrets file ${file} is damaged (${why}); it was left untouched`,
  )
}

export function checkKdfParams(kdf: KdfParams, where = 'kdf'): void {
  for (const key of ['log2N', 'r', 'p'] as const) {
    const [lo, hi] = KDF_BOUNDS[key]
    const v = kdf[key]
    if (!Number.isInteger(v) || v < lo || v > hi) {
      throw new ToolgateError('ERR_CONFIG_INVALID', `${where}.${key}: ${v} is outside ${lo}..${hi}`)
    }
  }
}

export async function deriveKeys(
  password: string,
  salt: Buffer,
  kdf: KdfParams,
): Promise<DerivedKeys> {
  const N = 2 ** kdf.log2N
  const maxmem = 128 * N * kdf.r * kdf.p + 16 * 1024 * 1024
  const out = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, 64, {N, r: kdf.r, p: kdf.p, maxmem}, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  )
  return {encKey: out.subarray(0, 32), macKey: out.subarray(32)}
}

function verifierFor(keys: DerivedKeys, prefix: Buffer): Buffer {
  return createHmac('sha256', keys.macKey).update(prefix.subarray(0, OFF_VERIFIER)).digest()
}

function checksum(header: Buffer): Buffer {
  return createHash('sha256').update(header.subarray(0, OFF_CHECKSUM)).digest().subarray(0, 16)
}

/** Parses and checks the header; every failure is ERR_SECRET_CORRUPT. No password needed. */
export function parseFile(bytes: Buffer, file: string): ParsedFile {
  if (bytes.length < HEADER_LEN + TAG_LEN) throw corrupt(file, 'too short')
  if (!bytes.subarray(0, 8).equals(MAGIC)) throw corrupt(file, 'not a toolgate secrets file')
  if (bytes[8] !== VERSION) throw corrupt(file, `unsupported format version ${bytes[8]}`)
  if (bytes[9] !== KDF_SCRYPT) throw corrupt(file, `unknown key derivation ${bytes[9]}`)
  const header = bytes.subarray(0, HEADER_LEN)
  if (!timingSafeEqual(checksum(header), header.subarray(OFF_CHECKSUM, HEADER_LEN))) {
    throw corrupt(file, 'header checksum mismatch')
  }
  const kdf = {log2N: bytes[10] ?? 0, r: bytes[11] ?? 0, p: bytes[12] ?? 0}
  try {
    checkKdfParams(kdf)
  } catch {
    throw corrupt(file, 'key derivation parameters out of range')
  }
  return {
    kdf,
    salt: Buffer.from(bytes.subarray(OFF_SALT, OFF_SALT + SALT_LEN)),
    verifier: Buffer.from(bytes.subarray(OFF_VERIFIER, OFF_VERIFIER + 32)),
    nonce: Buffer.from(bytes.subarray(OFF_NONCE, OFF_NONCE + NONCE_LEN)),
    header: Buffer.from(header),
    body: Buffer.from(bytes.subarray(HEADER_LEN)),
  }
}

/** Wrong password → ERR_SECRET_LOCKED; a body that fails authentication → ERR_SECRET_CORRUPT. */
export function decryptFile(parsed: ParsedFile, keys: DerivedKeys, file: string): SecretMap {
  if (!timingSafeEqual(verifierFor(keys, parsed.header), parsed.verifier)) {
    throw new ToolgateError(
      'ERR_SECRET_LOCKED',
      `wrong password for secrets file ${file} (from the OS keyring or TOOLGATE_SECRETS_PASSWORD); the file was left untouched`,
    )
  }
  let plain: Buffer
  try {
    const decipher = createDecipheriv('aes-256-gcm', keys.encKey, parsed.nonce, {
      authTagLength: TAG_LEN,
    })
    decipher.setAAD(parsed.header)
    decipher.setAuthTag(parsed.body.subarray(parsed.body.length - TAG_LEN))
    plain = Buffer.concat([
      decipher.update(parsed.body.subarray(0, parsed.body.length - TAG_LEN)),
      decipher.final(),
    ])
  } catch {
    throw corrupt(file, 'integrity check failed')
  }
  let doc: unknown
  try {
    doc = JSON.parse(plain.toString('utf8'))
  } catch {
    throw corrupt(file, 'content is not JSON')
  }
  const secrets = (doc as {v?: unknown; secrets?: unknown})?.secrets
  if (
    (doc as {v?: unknown})?.v !== 1 ||
    typeof secrets !== 'object' ||
    secrets === null ||
    Array.isArray(secrets)
  ) {
    throw corrupt(file, 'unexpected content')
  }
  const out: SecretMap = Object.create(null)
  for (const [k, v] of Object.entries(secrets)) {
    if (typeof v !== 'string') throw corrupt(file, 'unexpected content')
    out[k] = v
  }
  return out
}

/** A fresh salt for a new file. */
export function newSalt(): Buffer {
  return randomBytes(SALT_LEN)
}

/** Serialises the whole file with a fresh nonce (never reused under one key). */
export function encryptFile(
  secrets: SecretMap,
  keys: DerivedKeys,
  salt: Buffer,
  kdf: KdfParams,
): Buffer {
  const header = Buffer.alloc(HEADER_LEN)
  MAGIC.copy(header, 0)
  header[8] = VERSION
  header[9] = KDF_SCRYPT
  header[10] = kdf.log2N
  header[11] = kdf.r
  header[12] = kdf.p
  salt.copy(header, OFF_SALT)
  verifierFor(keys, header).copy(header, OFF_VERIFIER)
  randomBytes(NONCE_LEN).copy(header, OFF_NONCE)
  checksum(header).copy(header, OFF_CHECKSUM)
  const cipher = createCipheriv(
    'aes-256-gcm',
    keys.encKey,
    header.subarray(OFF_NONCE, OFF_NONCE + NONCE_LEN),
    {
      authTagLength: TAG_LEN,
    },
  )
  cipher.setAAD(header)
  const sorted: SecretMap = {}
  for (const k of Object.keys(secrets).sort()) sorted[k] = secrets[k] as string
  const body = Buffer.concat([
    cipher.update(JSON.stringify({v: 1, secrets: sorted}), 'utf8'),
    cipher.final(),
    cipher.getAuthTag(),
  ])
  return Buffer.concat([header, body])
}
