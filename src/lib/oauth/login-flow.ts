import {ToolgateError} from '../errors.ts'
import type {ResolvedServer} from './discovery.ts'
import type {RemoteAuthOptions} from './remote-auth-options.ts'

/**
 * Which login a person gets (`--remote-auth-flow`). `browser` and `device` are what they say.
 * `auto`: nobody to act (CI, `--non-interactive`) → fail at once, naming the ways that need no
 * person; a display → the browser; a terminal without a display (SSH) → the device grant when the
 * server offers it (RFC 8628), else the browser flow with its URL printed; neither → fail at once.
 */
export function chooseLoginFlow(
  options: Pick<RemoteAuthOptions, 'flow' | 'session'>,
  server: ResolvedServer,
): 'browser' | 'device' {
  const flow = options.flow ?? 'browser'
  if (flow !== 'auto') return flow
  const session = options.session ?? {interactive: true, display: true, tty: true}
  const nobody = !session.interactive
    ? 'this run is non-interactive (CI or --non-interactive)'
    : !session.display && !session.tty
      ? 'there is no display to open a browser on and no terminal to show a code on'
      : undefined
  if (nobody) {
    throw new ToolgateError(
      'ERR_INPUT_REQUIRED',
      `the remote server needs a login and ${nobody}; use --remote-auth-grant client_credentials (a machine identity), or --remote-auth-flow device to approve the login from another machine`,
    )
  }
  if (session.display) return 'browser'
  return server.as.device_authorization_endpoint ? 'device' : 'browser'
}
