/**
 * The CLI entry shared by bin/run.js (built or source) and bin/dev.js: argument preflight
 * (src/lib/cli/argv.ts), then oclif. An unknown command exits 2 (a usage mistake,
 * docs/exit-codes.md), as JSON on stderr with `--json`.
 */
import {preflight} from './lib/cli/argv.ts'
import {isWorkloadChild} from './lib/workloads/child-flag.ts'

export interface MainOptions {
  /** The repository (or package) root holding package.json. */
  root: string
  /** package.json, possibly with `oclif.commands.target` pointed at the sources. */
  pjson: Record<string, unknown>
  /** The entry script's URL (oclif resolves its plugin root from it). */
  dir: string
  development?: boolean
  fromSources?: boolean
}

export async function main(options: MainOptions): Promise<void> {
  const argv = process.argv.slice(2)
  // A detached run's background process loads only what one workload needs (no oclif, no other
  // command's libraries): see lib/workloads/child-main.ts.
  if (isWorkloadChild(argv)) {
    const {runWorkloadChild} = await import('./lib/workloads/child-main.ts')
    return runWorkloadChild()
  }
  const [{execute, settings}, {COMMANDS}] = await Promise.all([
    import('@oclif/core'),
    import('./index.ts'),
  ])
  const result = preflight(argv, Object.keys(COMMANDS))
  if (result.kind === 'unknown') {
    process.stderr.write(
      argv.includes('--json')
        ? JSON.stringify({error: result.message, code: 'ERR_USAGE'}) + '\n'
        : `Error: ${result.message}\n`,
    )
    process.exitCode = 2
    return
  }
  // Node strips the sources' types itself; oclif must not try to load ts-node.
  if (options.fromSources) settings.enableAutoTranspile = false
  await execute({
    args: result.argv,
    development: options.development,
    dir: options.dir,
    loadOptions: {root: options.root, pjson: options.pjson as never},
  })
}
