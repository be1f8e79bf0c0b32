/**
 * The first program toolgate runs inside the sandbox (issue 32). The sandbox has its own network
 * namespace with loopback only. With a port, this program listens on 127.0.0.1:<port> there — the
 * server's HTTP_PROXY — and hands that listening socket to toolgate over the IPC channel it was
 * started with (egress-channel.ts): from then on toolgate's egress proxy accepts the sandbox's
 * connections itself, and no byte of a download is copied in here. It closes its own copy and the
 * channel (nothing of either reaches the server), then starts the server with the same stdio and
 * ends as it does. With `-` as the port there is no network at all and it only starts the server.
 *
 * It is source text, run as `node -e <text> -- <port> <command> [args…]`, so nothing but the Node
 * binary has to be visible inside; the standalone executable evaluates the same text
 * (`toolgate __sandbox-init …`, src/cli.ts). Plain JavaScript that any Node ≥ 22 runs.
 */
/** The message the init sends its listening socket with (egress-channel.ts takes it). */
export const EGRESS_LISTENER_MESSAGE = 'egress-listener'

/** The prefix the server's loader variables carry past bwrap, setpriv and the init. */
export const SANDBOX_ENV_PREFIX = 'TOOLGATE_SANDBOX_ENV_'

export const SANDBOX_INIT_SOURCE = `(args) => {
  const net = process.getBuiltinModule('node:net')
  const cp = process.getBuiltinModule('node:child_process')
  const [port, command, ...rest] = args
  // The server's NODE_OPTIONS and LD_* came renamed, so that this process loaded nothing they
  // name (sandbox.ts, shelterLoaderEnv): the server gets them back.
  for (const name of Object.keys(process.env)) {
    if (!name.startsWith('${SANDBOX_ENV_PREFIX}')) continue
    process.env[name.slice(${SANDBOX_ENV_PREFIX.length})] = process.env[name]
    delete process.env[name]
  }
  const fail = (code, text) => {
    process.stderr.write('toolgate sandbox: ' + text + '\\n')
    process.exit(code)
  }
  const start = () => {
    const child = cp.spawn(command, rest, {stdio: 'inherit'})
    for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => child.kill(s))
    child.on('error', (err) => fail(127, 'cannot start ' + command + ': ' + err.message))
    child.on('exit', (code, signal) => process.exit(code === null ? 128 + (signal === 'SIGKILL' ? 9 : 15) : code))
  }
  if (port === '-') return start()
  if (typeof process.send !== 'function') fail(126, 'no channel to toolgate for the egress proxy')
  const server = net.createServer()
  server.on('error', (err) => fail(126, 'cannot listen on 127.0.0.1:' + port + ': ' + err.message))
  server.listen(Number(port), '127.0.0.1', () => {
    process.send({toolgate: '${EGRESS_LISTENER_MESSAGE}'}, server, (err) => {
      if (err) fail(126, 'cannot hand the egress listener to toolgate: ' + err.message)
      // The server starts once the channel is closed: nothing of it is left to inherit or use.
      process.once('disconnect', () => {
        server.close()
        start()
      })
      process.disconnect()
    })
  })
}`

/** Runs the init in this process (the standalone executable's `__sandbox-init`). */
export function runSandboxInit(args: string[]): void {
  // The same text the Node path runs with -e: one implementation, evaluated here once.
  const init = (0, eval)(SANDBOX_INIT_SOURCE) as (args: string[]) => void
  init(args)
}
