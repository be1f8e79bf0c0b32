import {ToolgateError} from '../errors.ts'
import {validateServerName} from './names.ts'

/**
 * Keyset cursors (contract §1): opaque to clients, they carry the last (name, version) of a page as
 * base64url JSON. Anything that does not decode to a valid position is refused with
 * ERR_BAD_PARAMETER naming `cursor`, so a tampered cursor is a 400 and never a scan from nowhere.
 */
export interface CursorPosition {
  name: string
  version: string
}

const MAX_CURSOR_LENGTH = 1024

export function encodeCursor(pos: CursorPosition): string {
  return Buffer.from(JSON.stringify([pos.name, pos.version]), 'utf8').toString('base64url')
}

export function decodeCursor(cursor: string): CursorPosition {
  const bad = (why: string) =>
    new ToolgateError('ERR_BAD_PARAMETER', `cursor: ${why}`, {details: {parameter: 'cursor'}})
  if (
    cursor.length === 0 ||
    cursor.length > MAX_CURSOR_LENGTH ||
    !/^[A-Za-z0-9_-]+$/.test(cursor)
  ) {
    throw bad('not a cursor returned by this server')
  }
  const bytes = Buffer.from(cursor, 'base64url')
  // Node's base64 decoder skips junk silently; a round trip proves the text was canonical.
  if (bytes.toString('base64url') !== cursor) throw bad('not a cursor returned by this server')
  let value: unknown
  try {
    value = JSON.parse(bytes.toString('utf8'))
  } catch {
    throw bad('not a cursor returned by this server')
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== 'string' ||
    typeof value[1] !== 'string' ||
    validateServerName(value[0]) !== undefined ||
    value[1].length === 0
  ) {
    throw bad('not a cursor returned by this server')
  }
  return {name: value[0], version: value[1]}
}
