import {hash as digest} from 'node:crypto'

/**
 * One audit record on one line, sealed into a hash chain (issue 35): each record carries its
 * sequence number, the hash of the record before it (`prev`) and its own hash, the SHA-256 of the
 * line's text without the `hash` field. The line is built, not re-serialised, so the hash covers
 * exactly the bytes on disk: an edited, removed or reordered record breaks the chain, and
 * `toolgate audit verify` names the first one.
 */
export const GENESIS = '0'.repeat(64)

const SEALED = /,"hash":"([0-9a-f]{64})"\}$/

/**
 * Seals `fields`, which it takes over: `seq` and `prev` are added to it (the callers build a fresh
 * record each time, so no copy is made on this hot path).
 */
export function sealRecord(
  fields: Record<string, unknown>,
  seq: number,
  prev: string,
): {line: string; hash: string} {
  fields.seq = seq
  fields.prev = prev
  const body = JSON.stringify(fields)
  // One-shot: 1.0 µs a record against 2.3 µs for a Hash object (Node 24, this machine).
  const hash = digest('sha256', body, 'hex')
  return {line: `${body.slice(0, -1)},"hash":"${hash}"}`, hash}
}

export type OpenedRecord =
  | {ok: true; seq: number; prev: string; hash: string; fields: Record<string, unknown>}
  | {ok: false; problem: string}

/** Reads a sealed line back and checks its own hash (not yet its place in the chain). */
export function openRecord(line: string): OpenedRecord {
  const m = SEALED.exec(line)
  if (!m) return {ok: false, problem: 'not a sealed audit record (no hash at its end)'}
  const body = `${line.slice(0, m.index)}}`
  let fields: Record<string, unknown>
  try {
    fields = JSON.parse(body) as Record<string, unknown>
  } catch {
    return {ok: false, problem: 'not JSON'}
  }
  const hash = digest('sha256', body, 'hex')
  if (hash !== m[1]) return {ok: false, problem: 'changed (its hash does not match its content)'}
  const {seq, prev} = fields
  if (typeof seq !== 'number' || typeof prev !== 'string')
    return {ok: false, problem: 'no seq or prev field'}
  return {ok: true, seq, prev, hash, fields}
}
