import {homedir} from 'node:os'
import {ToolgateError} from '../errors.ts'
import type {ClientResult} from './client-ops.ts'

/** How `client add/remove/setup` and `rm --unregister` print results, and fail when one failed. */
export function reportClientResults(
  results: ClientResult[],
  out: {json: boolean; stdout: (line: string) => void; stderr: (line: string) => void},
): void {
  for (const r of results) {
    if (out.json) {
      out.stdout(
        JSON.stringify({
          event: 'client-entry',
          client: r.client,
          entry: r.entry,
          change: r.change,
          ...(r.file ? {file: r.file} : {}),
          ...(r.via ? {via: r.via} : {}),
          ...(r.note ? {note: r.note} : {}),
          ...(r.error ? {error: r.error.message, code: r.error.code} : {}),
        }),
      )
      continue
    }
    const where = r.file ? ` in ${tilde(r.file)}` : ''
    if (r.error) out.stderr(`${r.name}: not changed: ${r.error.message}`)
    else if (r.change === 'skipped') out.stdout(`${r.name}: skipped (${r.note})`)
    else {
      const via = r.via ? ` (${r.via})` : ''
      out.stdout(`${r.name}: ${r.change} "${r.entry}"${via}${where}${r.note ? ` — ${r.note}` : ''}`)
    }
  }
  const failed = results.filter((r) => r.error)
  if (failed.length > 0) {
    const first = failed[0]!.error!
    throw new ToolgateError(
      first.code,
      failed.length === 1
        ? `${failed[0]!.name} was not changed: ${first.message}`
        : `${failed.length} of ${results.length} clients were not changed (first: ${first.message})`,
    )
  }
}

function tilde(path: string): string {
  const home = homedir()
  return path.startsWith(home + '/') ? '~' + path.slice(home.length) : path
}
