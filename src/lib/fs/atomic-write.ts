import {randomBytes} from 'node:crypto'
import {mkdir, open, rename, unlink} from 'node:fs/promises'
import {dirname, basename, join} from 'node:path'

/**
 * Writes a file atomically (temp file in the same directory, fsync, rename), so a reader or a crash
 * never sees half a file. `mode` defaults to 0600 because most of what we write holds secrets;
 * missing parent directories are created 0700 (contract §0).
 */
export async function atomicWriteFile(
  path: string,
  data: string | Uint8Array,
  options: {mode?: number; dirMode?: number} = {},
): Promise<void> {
  const dir = dirname(path)
  await mkdir(dir, {recursive: true, mode: options.dirMode ?? 0o700})
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  const handle = await open(tmp, 'wx', options.mode ?? 0o600)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } catch (err) {
    await handle.close()
    await unlink(tmp).catch(() => {})
    throw err
  }
  await handle.close()
  try {
    await rename(tmp, path)
  } catch (err) {
    await unlink(tmp).catch(() => {})
    throw err
  }
}
