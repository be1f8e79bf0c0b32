/**
 * What the CLI does with its arguments before oclif sees them (contract §0, "the CLI as a new user
 * meets it"): the words `help` and `version` work like `--help` and `--version`, and an unknown
 * command is answered with the closest known one instead of oclif's bare "command not found".
 * Pure functions: the entry (src/cli.ts) prints and exits.
 */

export type Preflight =
  | {kind: 'run'; argv: string[]}
  | {kind: 'unknown'; typed: string; suggestion?: string; message: string}

/** Levenshtein distance (insert, delete, substitute each cost 1); inputs are a few words long. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost))
    }
    prev = row
  }
  return prev[b.length]!
}

/** The known command (space-separated) closest to `typed`, if it is close enough to be a typo. */
export function closestCommand(typed: string, commands: string[]): string | undefined {
  let best: {name: string; d: number} | undefined
  for (const name of commands) {
    const d = editDistance(typed, name)
    if (!best || d < best.d) best = {name, d}
  }
  // A typo, not a different word: at most a third of the typed length (and at least 2) apart.
  if (!best || best.d > Math.max(2, Math.floor(typed.length / 3))) {
    // `secret gt`: the topic was right, so offer its closest subcommand anyway.
    const [topic] = typed.split(' ')
    const inTopic = commands.filter((c) => c.startsWith(topic + ' '))
    if (inTopic.length > 0 && typed.includes(' '))
      return closestCommand(typed, inTopic) ?? inTopic[0]
    return undefined
  }
  return best.name
}

/**
 * Rewrites `help [cmd…]`, and `--version`/`-v` to the `version` command (or `version` to
 * oclif's `--version` when there is no such command), and finds unknown commands.
 * `ids` are oclif command ids (`secret:get`); users type them with spaces.
 */
export function preflight(argv: string[], ids: string[], bin = 'toolgate'): Preflight {
  const commands = ids.map((id) => id.replaceAll(':', ' '))
  const topics = new Set(ids.filter((id) => id.includes(':')).map((id) => id.split(':')[0]!))
  const [first, ...rest] = argv
  if (first === 'version' && !commands.includes('version'))
    return {kind: 'run', argv: ['--version']}
  // `--version` and `-v` alone are the `version` command when there is one (commit, build date).
  if ((first === '--version' || first === '-v') && commands.includes('version'))
    return {kind: 'run', argv: ['version', ...rest]}
  if (first === 'help' && !commands.includes('help')) {
    const words = rest.filter((a) => !a.startsWith('-'))
    if (words.length > 0) {
      const found = preflight(words, ids, bin)
      if (found.kind === 'unknown') return found
    }
    return {kind: 'run', argv: [...words, '--help']}
  }
  const words: string[] = []
  for (const a of argv) {
    if (a.startsWith('-')) break
    words.push(a)
  }
  if (words.length === 0) return {kind: 'run', argv}
  // The longest run of leading words that names a command wins; the rest are its arguments —
  // unless the command has subcommands and the next word is a typo of one (`proxy stdo`: a
  // subcommand meant, not a server called "stdo"; issue 31).
  for (let n = words.length; n > 0; n--) {
    const name = words.slice(0, n).join(' ')
    if (!commands.includes(name)) continue
    const next = words[n]
    const subs = commands.filter((c) => c.startsWith(name + ' ') && c.split(' ').length === n + 1)
    if (next !== undefined && subs.length > 0) {
      const typed = `${name} ${next}`
      const near = subs.find(
        (c) => editDistance(typed, c) <= Math.max(1, Math.floor(next.length / 3)),
      )
      if (near)
        return {
          kind: 'unknown',
          typed,
          suggestion: near,
          message: `"${typed}" is not a ${bin} command. Did you mean "${bin} ${near}"? Run "${bin} help ${name}" for its subcommands.`,
        }
    }
    return {kind: 'run', argv}
  }
  // A topic alone (`toolgate secret`) shows the topic's help.
  if (topics.has(words[0]!) && words.length === 1) return {kind: 'run', argv}
  const typed = topics.has(words[0]!) ? words.slice(0, 2).join(' ') : words[0]!
  const suggestion = closestCommand(typed, commands)
  const message =
    `"${typed}" is not a ${bin} command.` +
    (suggestion ? ` Did you mean "${bin} ${suggestion}"?` : '') +
    ` Run "${bin} help" for the list of commands.`
  return {kind: 'unknown', typed, suggestion, message}
}
