import {createInterface} from 'node:readline/promises'
import {ToolgateError} from '../errors.ts'
import {effectiveStatus, listWorkloads} from '../workloads/state.ts'
import {CLIENTS, type ClientDef} from './catalog.ts'
import {
  chooseClients,
  runClientAdd,
  type ClientAddFlags,
  type ClientOutput,
} from './client-command.ts'
import {currentContext, detection} from './context.ts'

/**
 * `client setup`: `client add` with a picker. On a terminal it asks for what the flags leave open
 * (which workload, which clients); without one (CI, --non-interactive, no TTY) it never asks and
 * needs the flags instead.
 */
export async function runClientSetup(
  name: string | undefined,
  flags: ClientAddFlags,
  out: ClientOutput,
  canPrompt: boolean,
): Promise<void> {
  const chosen = Boolean(flags.client?.length) || flags['all-detected']
  if (!canPrompt && (!name || !chosen))
    throw new ToolgateError(
      'ERR_INPUT_REQUIRED',
      'client setup asks which workload and clients only on a terminal; here give them: toolgate client setup NAME --client ID|--all-detected',
    )
  const ask = canPrompt
    ? createInterface({input: process.stdin, output: process.stderr})
    : undefined
  try {
    const workload = name ?? (await pickWorkload(ask!))
    const clients = chosen ? chooseClients(flags) : await pickClients(ask!)
    await runClientAdd(workload, flags, out, clients)
  } finally {
    ask?.close()
  }
}

type Ask = NonNullable<ReturnType<typeof createInterface>>

async function pickWorkload(ask: Ask): Promise<string> {
  const running = (await listWorkloads()).filter((w) => effectiveStatus(w) === 'running')
  if (running.length === 0)
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      "no workload is running; start one with 'toolgate run NAME -- …'",
    )
  if (running.length === 1) return running[0]!.name
  running.forEach((w, i) => process.stderr.write(`  ${i + 1}) ${w.name}  ${w.url}\n`))
  const answer = (await ask.question('Which workload? [1] ')).trim() || '1'
  const picked = running[Number(answer) - 1]
  if (!picked)
    throw new ToolgateError(
      'ERR_USAGE',
      `"${answer.slice(0, 20)}" is not one of 1–${running.length}`,
    )
  return picked.name
}

async function pickClients(ask: Ask): Promise<ClientDef[]> {
  const ctx = currentContext()
  const found = CLIENTS.filter((c) => detection(c, ctx))
  CLIENTS.forEach((c, i) =>
    process.stderr.write(`  ${i + 1}) ${c.name.padEnd(15)} ${detection(c, ctx) ? 'found' : ''}\n`),
  )
  const fallback = found.map((c) => CLIENTS.indexOf(c) + 1).join(',')
  const answer =
    (await ask.question(`Which clients (comma-separated)? [${fallback || 'none'}] `)).trim() ||
    fallback
  const picked = answer
    .split(',')
    .filter((s) => s.trim())
    .map((s) => {
      const client = CLIENTS[Number(s.trim()) - 1]
      if (!client)
        throw new ToolgateError(
          'ERR_USAGE',
          `"${s.trim().slice(0, 20)}" is not one of 1–${CLIENTS.length}`,
        )
      return client
    })
  if (picked.length === 0) throw new ToolgateError('ERR_USAGE', 'no client chosen')
  return [...new Set(picked)]
}
