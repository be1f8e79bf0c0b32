import type {ChildProcess} from 'node:child_process'
import {Server as NetServer} from 'node:net'
import type {Logger} from '../log/logger.ts'
import type {EgressProxy} from './egress-proxy.ts'
import {EGRESS_LISTENER_MESSAGE} from './init-source.ts'

/**
 * toolgate's end of the channel the sandbox's init hands its listening socket over (issue 32):
 * the init listens on the sandbox's own loopback port (its network namespace has nothing else)
 * and sends that socket once over the IPC channel the sandbox was started with
 * (init-source.ts). The egress proxy then serves it here, in toolgate's process, and a download
 * is copied once instead of through a forwarder inside. Exactly one listening socket is taken,
 * the channel is closed at once, and the listener goes when the sandbox does (it would otherwise
 * keep the sandbox's network namespace alive).
 */

export function acceptEgressListener(
  child: ChildProcess,
  egress: EgressProxy,
  logger: Logger,
): void {
  let taken = false
  child.on('message', (message: unknown, handle: unknown) => {
    const expected =
      !taken &&
      handle instanceof NetServer &&
      typeof message === 'object' &&
      message !== null &&
      (message as {toolgate?: unknown}).toolgate === EGRESS_LISTENER_MESSAGE
    if (child.connected) child.disconnect()
    if (!expected) {
      // Only the init speaks on the channel, once; anything else is dropped with its handle.
      logger.warn('the sandbox sent an unexpected message on its channel: ignored')
      const h = handle as {close?: () => void; destroy?: () => void} | undefined
      if (h?.destroy) h.destroy()
      else h?.close?.()
      return
    }
    taken = true
    void egress.serve(handle).then(
      (listener) => {
        if (child.exitCode !== null || child.signalCode !== null) void listener.close()
        else child.once('exit', () => void listener.close())
      },
      (err: Error) => {
        logger.warn('the egress proxy cannot serve the sandbox', {reason: err.message})
        // Closed here, or it would keep the sandbox's network namespace alive.
        handle.close()
      },
    )
  })
}
