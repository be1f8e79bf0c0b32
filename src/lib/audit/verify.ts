import {existsSync, readFileSync} from 'node:fs'
import {ToolgateError} from '../errors.ts'
import {GENESIS, openRecord} from './record.ts'

/**
 * `toolgate audit verify FILE…` (issue 35): reads the files as one chain, oldest first (a file and
 * its rotations: FILE.5 … FILE.1, FILE), and names the first record that was changed, removed or
 * reordered. A chain may start after the genesis when older rotations were deleted on purpose:
 * that is said, not treated as tampering.
 */
export interface VerifyResult {
  ok: boolean
  records: number
  files: string[]
  /** The first problem: where, and what. */
  problem?: {file: string; line: number; seq?: number; what: string}
  /** The chain starts after older records that are no longer here (rotated away). */
  startsAt?: number
  lastHash?: string
}

/** A log file given alone is read with its rotations, oldest first. */
export function chainFiles(files: string[]): string[] {
  if (files.length !== 1) return files
  const base = files[0]!
  const rotated: string[] = []
  for (let i = 1; existsSync(`${base}.${i}`); i++) rotated.unshift(`${base}.${i}`)
  return [...rotated, base]
}

export function verifyAuditChain(files: string[]): VerifyResult {
  let prev: string | undefined
  let prevSeq: number | undefined
  let records = 0
  let startsAt: number | undefined
  const fail = (file: string, line: number, what: string, seq?: number): VerifyResult => ({
    ok: false,
    records,
    files,
    problem: {file, line, ...(seq !== undefined ? {seq} : {}), what},
  })
  for (const file of files) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new ToolgateError(
        'ERR_FILE_UNREADABLE',
        `${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
    }
    const lines = text.split('\n')
    if (lines.at(-1) === '') lines.pop()
    for (let i = 0; i < lines.length; i++) {
      const r = openRecord(lines[i]!)
      if (!r.ok) return fail(file, i + 1, r.problem)
      if (prevSeq === undefined) {
        // The first record: the genesis, or a chain whose older part was rotated away.
        if (r.seq !== 1 || r.prev !== GENESIS) startsAt = r.seq
      } else if (r.seq <= prevSeq) {
        return fail(file, i + 1, `reordered (seq ${r.seq} after seq ${prevSeq})`, r.seq)
      } else if (r.seq !== prevSeq + 1) {
        // A record skipped here but found further on was moved, not removed.
        const missing = `"seq":${prevSeq + 1},"prev"`
        const later = lines.slice(i + 1).some((l) => l.includes(missing))
        const what = later
          ? `reordered (seq ${r.seq} comes before seq ${prevSeq + 1})`
          : `records ${prevSeq + 1}–${r.seq - 1} before it were removed`
        return fail(file, i + 1, what, r.seq)
      } else if (r.prev !== prev) {
        return fail(
          file,
          i + 1,
          `the record before it was changed or replaced (its prev does not match)`,
          r.seq,
        )
      }
      prev = r.hash
      prevSeq = r.seq
      records++
    }
  }
  return {
    ok: true,
    records,
    files,
    ...(startsAt !== undefined ? {startsAt} : {}),
    ...(prev ? {lastHash: prev} : {}),
  }
}
