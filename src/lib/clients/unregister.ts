import {createInterface} from 'node:readline/promises'
import {removeFromClients} from './client-ops.ts'
import {readRegistrations} from './registrations.ts'
import {reportClientResults} from './report.ts'
import type {ClientOutput} from './client-command.ts'

/**
 * After `rm NAME`: the client entries toolgate wrote for it. `--unregister` removes them; on a
 * terminal the user is asked; elsewhere they are kept and the command to remove them is named
 * (a script never loses entries it did not ask to lose).
 */
export async function afterRemove(
  name: string,
  options: {unregister: boolean; canPrompt: boolean; out: ClientOutput},
): Promise<void> {
  const entries = (await readRegistrations(process.env)).filter((r) => r.workload === name)
  if (entries.length === 0) return
  let remove = options.unregister
  if (!remove && options.canPrompt) {
    const ask = createInterface({input: process.stdin, output: process.stderr})
    try {
      const answer = await ask.question(
        `Remove the ${entries.length} client entr${entries.length === 1 ? 'y' : 'ies'} toolgate wrote for ${name} too? [y/N] `,
      )
      remove = /^y(es)?$/i.test(answer.trim())
    } finally {
      ask.close()
    }
  }
  if (remove)
    return reportClientResults(
      await removeFromClients({name, by: 'workload', env: process.env}),
      options.out,
    )
  const line = `${name}: ${entries.length} client entr${entries.length === 1 ? 'y' : 'ies'} kept (remove with 'toolgate client remove ${name}')`
  if (options.out.json)
    options.out.stdout(JSON.stringify({event: 'client-entries-kept', name, count: entries.length}))
  else options.out.stderr(line)
}
