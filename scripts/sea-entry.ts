/**
 * Entry of the standalone executable (scripts/build-binary.ts bundles it with esbuild into one
 * CommonJS file for a Node single-executable application).
 *
 * oclif's explicit strategy normally `import()`s `oclif.commands.target` from disk; a single
 * executable has no such file. So the root plugin is handed the bundled `COMMANDS` map directly,
 * and oclif's Config is loaded from the package.json embedded at build time. Everything else
 * (help, `--version`, topics such as `secret set`, flag parsing, exit codes) is oclif's own code,
 * so the binary behaves exactly like `bin/run.js`.
 */
import {execute, Plugin, settings} from '@oclif/core'
import {dirname} from 'node:path'
import pjson from '../package.json' with {type: 'json'}
import {COMMANDS} from '../src/index.ts'
import {preflight} from '../src/lib/cli/argv.ts'
import {isWorkloadChild} from '../src/lib/workloads/child-flag.ts'
import {runWorkloadChild} from '../src/lib/workloads/child-main.ts'

type CommandMap = Record<string, unknown>
const proto = Plugin.prototype as unknown as {
  isRoot: boolean
  commandCache?: CommandMap
  loadCommandsFromTarget(): Promise<CommandMap | undefined>
}
const original = proto.loadCommandsFromTarget
proto.loadCommandsFromTarget = async function (this: typeof proto) {
  if (!this.isRoot) return original.call(this)
  this.commandCache = COMMANDS as CommandMap
  return this.commandCache
}

settings.enableAutoTranspile = false
// Same argument preflight as src/cli.ts (`help <cmd>`, `version`, unknown-command suggestion), and
// the same hand-off of a detached run's background process (lib/workloads/child-main.ts).
const argv = process.argv.slice(2)
if (isWorkloadChild(argv)) void runWorkloadChild()
else runCli(argv)

function runCli(argv: string[]): void {
  const pre = preflight(argv, Object.keys(COMMANDS))
  if (pre.kind === 'unknown') {
    process.stderr.write(
      argv.includes('--json')
        ? JSON.stringify({error: pre.message, code: 'ERR_USAGE'}) + '\n'
        : `Error: ${pre.message}\n`,
    )
    process.exit(2)
  }
  void execute({
    args: pre.argv,
    // The root is only used for oclif's own bookkeeping (cache/data dirs come from XDG, not from it).
    loadOptions: {root: dirname(process.execPath), pjson: structuredClone(pjson) as never},
  })
}
