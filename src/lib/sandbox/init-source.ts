/**
 * The first program toolgate runs inside the sandbox (issue 32). The sandbox has its own network
 * namespace with loopback only; this program listens on 127.0.0.1:<port> there and joins each
 * connection to the egress proxy's unix socket, bound in from outside — the server's HTTP_PROXY.
 * Then it starts the server with the same stdio and ends as it does. With `-` as the socket there
 * is no network at all and it only starts the server.
 *
 * It is source text, run as `node -e <text> -- <socket> <port> <command> [args…]`, so nothing but
 * the Node binary has to be visible inside; the standalone executable evaluates the same text
 * (`toolgate __sandbox-init …`, src/cli.ts). Plain JavaScript that any Node ≥ 22 runs.
 */
export const SANDBOX_INIT_SOURCE = `(args) => {
  const net = process.getBuiltinModule('node:net')
  const cp = process.getBuiltinModule('node:child_process')
  const [socket, port, command, ...rest] = args
  const start = () => {
    const child = cp.spawn(command, rest, {stdio: 'inherit'})
    for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => child.kill(s))
    child.on('error', (err) => {
      process.stderr.write('toolgate sandbox: cannot start ' + command + ': ' + err.message + '\\n')
      process.exit(127)
    })
    child.on('exit', (code, signal) => process.exit(code === null ? 128 + (signal === 'SIGKILL' ? 9 : 15) : code))
  }
  if (socket === '-') return start()
  // Downloads (egress proxy -> server) are read into one reused buffer and written on at once;
  // reading pauses while a write is still being sent (the same relay as relay.ts, which this
  // text cannot import). Uploads are piped.
  const server = net.createServer((c) => {
    let waiting = false
    const flushed = () => {
      if (waiting && c.writableLength === 0) {
        waiting = false
        up.resume()
      }
    }
    const onread = {
      buffer: Buffer.allocUnsafe(1024 * 1024),
      callback: (bytes, buffer) => {
        c.write(buffer.subarray(0, bytes), flushed)
        if (c.writableLength === 0) return true
        waiting = true
        return false
      },
    }
    const up = net.connect({path: socket, onread})
    up.once('end', () => c.end())
    c.pipe(up)
    c.on('error', () => up.destroy())
    up.on('error', () => c.destroy())
  })
  server.on('error', (err) => {
    process.stderr.write('toolgate sandbox: cannot listen on 127.0.0.1:' + port + ': ' + err.message + '\\n')
    process.exit(126)
  })
  server.listen(Number(port), '127.0.0.1', start)
}`

/** Runs the init in this process (the standalone executable's `__sandbox-init`). */
export function runSandboxInit(args: string[]): void {
  // The same text the Node path runs with -e: one implementation, evaluated here once.
  const init = (0, eval)(SANDBOX_INIT_SOURCE) as (args: string[]) => void
  init(args)
}
