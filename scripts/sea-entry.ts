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
import {versionInfo, versionLine} from '../src/lib/version.ts'
import {isWorkloadChild} from '../src/lib/workloads/child-flag.ts'
import {SANDBOX_INIT_FLAG} from '../src/lib/sandbox/init-flag.ts'

// Fast path: `--version`, `-v` and `version` [--json] print the build facts before oclif and the
// command modules are even loaded (esbuild keeps the dynamic imports below lazy), so the most
// common scripted call starts nearly as fast as the bare runtime (bench/binary-start.bench.ts).
const args = process.argv.slice(2)
const json = args.length === 2 && args[1] === '--json'
if (
  (args.length === 1 || json) &&
  (args[0] === '--version' || args[0] === '-v' || args[0] === 'version')
) {
  process.stdout.write(
    (json ? JSON.stringify({event: 'version', ...versionInfo()}) : versionLine()) + '\n',
  )
} else if (args[0] === SANDBOX_INIT_FLAG) {
  // Inside a sandbox: the egress listener handed to toolgate, then the server (lib/sandbox/init-source.ts).
  void import('../src/lib/sandbox/init-source.ts').then((m) => m.runSandboxInit(args.slice(1)))
} else if (isWorkloadChild(args)) {
  // A detached run's background process skips oclif altogether (lib/workloads/child-main.ts), as
  // src/cli.ts does.
  void import('../src/lib/workloads/child-main.ts').then((m) => m.runWorkloadChild())
} else {
  // A CommonJS bundle has no top-level await; a failure to load is reported like oclif's own.
  main().catch((err: unknown) => {
    process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}

async function main(): Promise<void> {
  const [{execute, Plugin, settings}, {dirname}, {default: pjson}, {COMMANDS}, {preflight}] =
    await Promise.all([
      import('@oclif/core'),
      import('node:path'),
      import('../package.json', {with: {type: 'json'}}),
      import('../src/index.ts'),
      import('../src/lib/cli/argv.ts'),
    ])

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
  // Same argument preflight as src/cli.ts (`help <cmd>`, `version`, unknown-command suggestion).
  const argv = process.argv.slice(2)
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
