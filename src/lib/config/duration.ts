import {ToolgateError} from '../errors.ts'

const UNIT_MS: Record<string, number> = {ms: 1, s: 1000, m: 60_000, h: 3_600_000}

/**
 * Parses Go-style durations as the spec writes them (`30s`, `1m`, `2m30s`, `1h`, `500ms`) into
 * milliseconds. A bare number is refused: `30` could mean seconds or milliseconds.
 */
export function parseDuration(text: string, where = 'duration'): number {
  const trimmed = text.trim()
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(trimmed)) {
    throw new ToolgateError(
      'ERR_USAGE',
      `${where}: "${text}" is not a duration (use forms like 30s, 1m, 2m30s, 1h, 500ms)`,
    )
  }
  let total = 0
  for (const m of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number)
  }
  if (total <= 0) throw new ToolgateError('ERR_USAGE', `${where}: must be greater than zero`)
  return Math.round(total)
}
