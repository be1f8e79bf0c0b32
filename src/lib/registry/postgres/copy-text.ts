/**
 * One row of PostgreSQL's COPY text format: fields separated by tabs, the row ended by a newline,
 * `\N` for NULL, and backslash, newline, carriage return and tab escaped inside a field (the
 * characters COPY would otherwise read as structure). PostgreSQL text cannot hold U+0000: callers
 * pass fields that have none (see sync.ts).
 */
const ESCAPES: Record<string, string> = {'\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t'}
const SPECIAL = /[\\\n\r\t]/g

export function copyField(value: string | number | boolean | null): string {
  if (value === null) return '\\N'
  if (typeof value === 'boolean') return value ? 't' : 'f'
  if (typeof value === 'number') return String(value)
  return value.replace(SPECIAL, (c) => ESCAPES[c] as string)
}

export function copyRow(values: (string | number | boolean | null)[]): string {
  return values.map(copyField).join('\t') + '\n'
}
