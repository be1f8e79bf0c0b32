/**
 * The gateway's names (issue 37): a backend's tool or prompt `x` is `<prefix>__x`, its resource
 * `u` is `<prefix>+u` (a URI scheme may hold '+', so `ev+file:///a` stays a URI). Prefixes hold
 * no '_' or '+' (config.ts), so the first separator always ends the prefix and two backends can
 * never list the same name.
 */

export const NAME_SEPARATOR = '__'
export const URI_SEPARATOR = '+'

export function prefixedName(prefix: string, name: string): string {
  return prefix + NAME_SEPARATOR + name
}

export function prefixedUri(prefix: string, uri: string): string {
  return prefix + URI_SEPARATOR + uri
}

/** `<prefix>__rest` → [prefix, rest]; undefined when there is no separator. */
export function splitName(exposed: string): [string, string] | undefined {
  const at = exposed.indexOf(NAME_SEPARATOR)
  return at <= 0 ? undefined : [exposed.slice(0, at), exposed.slice(at + NAME_SEPARATOR.length)]
}

export function splitUri(exposed: string): [string, string] | undefined {
  const at = exposed.indexOf(URI_SEPARATOR)
  return at <= 0 ? undefined : [exposed.slice(0, at), exposed.slice(at + URI_SEPARATOR.length)]
}

export type GatewayResourceType = 'Tool' | 'Prompt' | 'Resource'

/**
 * Cedar's view of a gateway (issue 37): every `Tool`, `Prompt` and `Resource` carries `backend`,
 * the name of the backend its prefix names, so one policy can govern every backend. A name with
 * no known prefix gets no attribute (the gateway refuses it as unknown anyway).
 */
export function backendAttribute(
  backends: ReadonlyArray<{name: string; prefix: string}>,
): (type: GatewayResourceType, id: string) => {backend: string} | undefined {
  const byPrefix = new Map(backends.map((b) => [b.prefix, b.name]))
  return (type, id) => {
    const split = type === 'Resource' ? splitUri(id) : splitName(id)
    const backend = split && byPrefix.get(split[0])
    return backend === undefined ? undefined : {backend}
  }
}
