/**
 * What makes a JSON text ambiguous: two readers could see two different messages in it. A policy
 * that decides on one reading and a server that executes another is an authorization bypass
 * (`{"name":"safe","name":"deploy"}`: JSON.parse keeps the last, other parsers the first), so the
 * authorizing proxy refuses these texts outright rather than guessing which reading the server uses.
 */

const UTF8 = new TextDecoder('utf-8', {fatal: true, ignoreBOM: true})

export type Ambiguity =
  {kind: 'bom'} | {kind: 'invalid_utf8'} | {kind: 'duplicate_key'; key: string; path: string}

/** Decodes a body as strict UTF-8 (RFC 8259 §8.1): no BOM, no invalid sequences. */
export function strictUtf8(body: Uint8Array): string | Ambiguity {
  if (body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf)
    return {kind: 'bom'}
  try {
    return UTF8.decode(body)
  } catch {
    return {kind: 'invalid_utf8'}
  }
}

type Frame =
  | {object: true; keys: Set<string>; expectKey: boolean; path: string}
  | {object: false; path: string}

/**
 * The first object key that appears twice in one object, at any depth (RFC 8259 §4: names
 * "SHOULD be unique"; behaviour with duplicates is unpredictable). `text` must already be valid
 * JSON (JSON.parse accepted it); keys are compared after unescaping, so `"a"` and `"\u0061"` clash.
 */
export function findDuplicateKey(text: string): {key: string; path: string} | undefined {
  const stack: Frame[] = []
  let lastKey = ''
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      let j = i + 1
      let escaped = false
      for (; j < text.length; j++) {
        const d = text.charCodeAt(j)
        if (d === 0x5c /* \ */) {
          escaped = true
          j++
        } else if (d === 0x22) break
      }
      const top = stack[stack.length - 1]
      if (top?.object && top.expectKey) {
        const raw = text.slice(i, j + 1)
        const key = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1)
        if (top.keys.has(key)) return {key, path: top.path}
        top.keys.add(key)
        top.expectKey = false
        lastKey = key
      }
      i = j
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const parent = stack[stack.length - 1]
      const path = !parent ? '$' : parent.object ? `${parent.path}.${lastKey}` : `${parent.path}[]`
      stack.push(
        c === 0x7b ? {object: true, keys: new Set(), expectKey: true, path} : {object: false, path},
      )
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop()
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1]
      if (top?.object) top.expectKey = true
    }
  }
  return undefined
}

/** The body's text when it is unambiguous JSON text, else what makes it ambiguous. */
export function unambiguousJsonText(body: Uint8Array): {text: string} | Ambiguity {
  const text = strictUtf8(body)
  if (typeof text !== 'string') return text
  try {
    JSON.parse(text)
  } catch {
    return {text} // not JSON at all: the caller's parser reports that
  }
  const dup = findDuplicateKey(text)
  return dup ? {kind: 'duplicate_key', ...dup} : {text}
}

export function describeAmbiguity(a: Ambiguity): string {
  switch (a.kind) {
    case 'bom':
      return 'the request body starts with a byte order mark (RFC 8259 §8.1 forbids it)'
    case 'invalid_utf8':
      return 'the request body is not valid UTF-8'
    case 'duplicate_key':
      return `duplicate key "${a.key.slice(0, 64)}" in ${a.path}: ambiguous JSON is refused`
  }
}
