/**
 * Secrets store costs, side by side with a plaintext baseline (a JSON file read/written the same way).
 * Bounded: a fixed number of iterations in a temp dir, no network, no keyring (env password).
 * Run: node_modules/.bin/node bench/secrets.bench.ts
 */
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {atomicWriteFile} from '../src/lib/fs/atomic-write.ts'
import {openSecretStore} from '../src/lib/secrets/index.ts'

const home = await mkdtemp(join(tmpdir(), 'toolgate-bench-secrets-'))
const env = {HOME: home, TOOLGATE_SECRETS_PASSWORD: 'bench-password'}
const plain = join(home, 'plain.json')

async function time(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const t = performance.now()
  for (let i = 0; i < n; i++) await fn(i)
  return (performance.now() - t) / n
}

try {
  const rows: Array<[string, number, number]> = []
  const open = () => openSecretStore({env, keyring: false})
  const store = await open()
  for (let i = 0; i < 50; i++) await store.set(`s${i}`, 'x'.repeat(40))
  await atomicWriteFile(
    plain,
    JSON.stringify({
      v: 1,
      secrets: Object.fromEntries(Array.from({length: 50}, (_, i) => [`s${i}`, 'x'.repeat(40)])),
    }),
  )

  const cold = await time(5, async () => (await open()).get('s1'))
  const baseRead = await time(200, async () => JSON.parse(await readFile(plain, 'utf8')).secrets.s1)
  rows.push(['first get in a process (scrypt N=2^17)', cold, baseRead])
  const warm = await time(200, () => store.get('s1'))
  rows.push(['get, key cached', warm, baseRead])
  const set = await time(50, (i) => store.set(`w${i % 5}`, 'y'.repeat(40)))
  const baseWrite = await time(50, async () => {
    const doc = JSON.parse(await readFile(plain, 'utf8'))
    await atomicWriteFile(plain, JSON.stringify(doc))
  })
  rows.push(['set (lock + decrypt + encrypt + atomic write)', set, baseWrite])

  console.log('operation'.padEnd(48), 'encrypted ms'.padStart(14), 'plaintext ms'.padStart(14))
  for (const [name, enc, base] of rows)
    console.log(name.padEnd(48), enc.toFixed(3).padStart(14), base.toFixed(3).padStart(14))
  console.log('(50 secrets of 40 bytes; figures are noisy on a shared machine)')
} finally {
  await rm(home, {recursive: true, force: true})
}
