import type {Socket} from 'node:net'

/**
 * The read side of a relay that copies once (issue 32's download target): a socket created with
 * `onread: relay.onread` reads into one reused buffer, and each read is written on to `to` at
 * once. A write that does not finish synchronously still holds the buffer, so reading pauses
 * until it is flushed (backpressure, and the buffer is never overwritten while it is being sent).
 * Node's `pipe` allocates a fresh 64 KiB buffer per read instead: a relay through it cost three
 * times the CPU per megabyte here, and a 256 KiB buffer a third more than 1 MiB
 * (bench/sandbox.bench.ts). Pages of the buffer are touched only as far as reads fill them.
 */
export const RELAY_BUFFER_BYTES = 1024 * 1024

export interface Relay {
  onread: {buffer: Buffer; callback: (bytes: number, buffer: Buffer) => boolean}
  /** Names the socket the reads come from (made with `onread`); ends `to` when it ends. */
  from(source: Socket): void
  /** Bytes relayed so far. */
  readonly bytes: number
}

export function relayTo(to: Socket): Relay {
  let source: Socket | undefined
  let waiting = false
  let bytes = 0
  // Resumes only once nothing is left to send: only then is the buffer free again.
  const flushed = () => {
    if (waiting && to.writableLength === 0) {
      waiting = false
      source?.resume()
    }
  }
  return {
    onread: {
      buffer: Buffer.allocUnsafe(RELAY_BUFFER_BYTES),
      // Returning false pauses the source (Node's onread contract) until `flushed`.
      callback: (read, buffer) => {
        bytes += read
        to.write(buffer.subarray(0, read), flushed)
        if (to.writableLength === 0) return true
        waiting = true
        return false
      },
    },
    from(s) {
      source = s
      s.once('end', () => to.end())
    },
    get bytes() {
      return bytes
    },
  }
}
