import {
  parseTree,
  printParseErrorCode,
  type FormattingOptions,
  type Node,
  type ParseError,
} from 'jsonc-parser'
import {ToolgateError} from '../errors.ts'
import type {ServersDoc} from './servers-doc.ts'

/**
 * A client's JSON config (comments and trailing commas allowed, as VS Code and Cursor write them),
 * edited in place with jsonc-parser: only the one entry's text changes; the user's comments,
 * formatting, other servers and unknown keys stay byte for byte.
 */
export function jsonServers(file: string, text: string | undefined, key: string[]): ServersDoc {
  const source = text ?? ''
  const root = source.trim() === '' ? undefined : parseChecked(file, source)
  if (root && root.type !== 'object')
    fail(file, source, root.offset, 'the file is not a JSON object')
  const servers = root && nodeAt(root, key)
  if (servers && servers.type !== 'object')
    fail(file, source, servers.offset, `"${key.join('.')}" is not an object`)
  const entries = (servers ? valueOf(servers) : {}) as Record<string, unknown>
  const rootValue = (root ? valueOf(root) : {}) as Record<string, unknown>
  const formatting = formattingOf(source)
  const edit = (name: string, value: unknown) =>
    value !== undefined
      ? setProperty(source, root, [...key, name], value, formatting)
      : removeProperty(source, servers, name)
  return {
    entries,
    root: rootValue,
    set: (name, value) => edit(name, value),
    remove: (name) => edit(name, undefined),
    reread: (next) => jsonServers(file, next, key).root,
  }
}

function parseChecked(file: string, text: string): Node {
  const errors: ParseError[] = []
  const root = parseTree(text, errors, {allowTrailingComma: true, disallowComments: false})
  const first = errors[0]
  if (first) fail(file, text, first.offset, printParseErrorCode(first.error))
  if (!root) fail(file, text, 0, 'the file is empty or not JSON')
  const duplicate = findDuplicateKey(root)
  // Which of two same-named keys a client reads is up to the client: refuse to guess.
  if (duplicate) fail(file, text, duplicate.offset, `duplicate key "${String(duplicate.value)}"`)
  return root
}

function findDuplicateKey(node: Node): Node | undefined {
  if (node.type === 'object') {
    const seen = new Set<string>()
    for (const property of node.children ?? []) {
      const keyNode = property.children?.[0]
      if (!keyNode) continue
      if (seen.has(String(keyNode.value))) return keyNode
      seen.add(String(keyNode.value))
    }
  }
  for (const child of node.children ?? []) {
    const found = findDuplicateKey(child)
    if (found) return found
  }
  return undefined
}

function nodeAt(root: Node, path: string[]): Node | undefined {
  let node: Node | undefined = root
  for (const segment of path) {
    if (node?.type !== 'object') return undefined
    node = node.children?.find((p) => p.children?.[0]?.value === segment)?.children?.[1]
  }
  return node
}

function valueOf(node: Node): unknown {
  switch (node.type) {
    case 'object':
      return Object.fromEntries(
        (node.children ?? []).map((p) => [String(p.children![0]!.value), valueOf(p.children![1]!)]),
      )
    case 'array':
      return (node.children ?? []).map(valueOf)
    default:
      return node.value
  }
}

/**
 * Sets `path` to `value` touching no other byte: a present value is replaced; a missing property
 * goes after the last one of the deepest object that exists (keeping the file's trailing-comma
 * habit), indented like its siblings. jsonc-parser's own formatter would re-flow the neighbouring
 * lines, and those are the user's.
 */
function setProperty(
  text: string,
  root: Node | undefined,
  path: string[],
  value: unknown,
  fmt: FormattingOptions & {eol: string},
): string {
  const unit = fmt.insertSpaces ? ' '.repeat(fmt.tabSize ?? 2) : '\t'
  if (!root)
    return JSON.stringify(nest(path, value), null, unit).replaceAll('\n', fmt.eol) + fmt.eol
  let node = root
  let depth = 0
  for (; depth < path.length; depth++) {
    const child = node.children?.find((p) => p.children?.[0]?.value === path[depth])?.children?.[1]
    if (!child) break
    node = child
  }
  const render = (v: unknown, indent: string) =>
    JSON.stringify(v, null, unit)
      .split('\n')
      .join(fmt.eol + indent)
  if (depth === path.length) {
    const indent = indentAt(text, node.parent?.offset ?? node.offset)
    return (
      text.slice(0, node.offset) + render(value, indent) + text.slice(node.offset + node.length)
    )
  }
  // `node` is the deepest existing object: add `"key": nested value` to it.
  const property = `${JSON.stringify(path[depth])}: `
  const nested = nest(path.slice(depth + 1), value)
  const last = node.children?.at(-1)
  if (!last) {
    // An empty object: the new property goes first; whatever was inside (a comment) stays after it.
    const outer = indentAt(text, node.offset)
    const inner = outer + unit
    const rest = text.slice(node.offset + 1, node.offset + node.length - 1)
    const body =
      fmt.eol + inner + property + render(nested, inner) + (rest.trim() ? rest : fmt.eol + outer)
    return text.slice(0, node.offset + 1) + body + text.slice(node.offset + node.length - 1)
  }
  const indent = indentAt(text, last.offset)
  const end = last.offset + last.length
  const gap = GAP.exec(text.slice(end))![0]
  const trailingComma = text[end + gap.length] === ','
  const line = property + render(nested, indent)
  if (trailingComma) {
    const at = end + gap.length + 1
    return text.slice(0, at) + fmt.eol + indent + line + ',' + text.slice(at)
  }
  // A comment after the last property on its line stays with it: the new line goes below it.
  const eolAt = text.indexOf('\n', end)
  if (eolAt !== -1 && LINE_REST.test(text.slice(end, eolAt)))
    return (
      text.slice(0, end) +
      ',' +
      text.slice(end, eolAt + 1) +
      indent +
      line +
      fmt.eol +
      text.slice(eolAt + 1)
    )
  return text.slice(0, end) + ',' + fmt.eol + indent + line + text.slice(end)
}

// Whitespace and comments between two tokens; the rest of a line that holds only a comment.
const GAP = /^(?:\s|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*/
const LINE_REST = /^[ \t]*(?:\/\/[^\n]*|\/\*[^\n]*?\*\/[ \t]*)?\r?$/

/**
 * Removes one property touching nothing else: its own line(s) go when it has them to itself,
 * with its own comma; a comment on a neighbour's line, or above the next property, stays.
 */
function removeProperty(text: string, object: Node | undefined, name: string): string {
  const props = object?.children ?? []
  const index = props.findIndex((p) => p.children?.[0]?.value === name)
  if (index === -1) return text
  const prop = props[index]!
  let start = prop.offset
  let end = prop.offset + prop.length
  // Its own comma after it (skipping comments between value and comma).
  const gap = GAP.exec(text.slice(end))![0]
  let commaBefore: number | undefined
  if (text[end + gap.length] === ',') end += gap.length + 1
  else if (index > 0) {
    // The last property: the comma before it (after the previous one) goes instead.
    const prev = props[index - 1]!
    const prevEnd = prev.offset + prev.length
    const at = prevEnd + GAP.exec(text.slice(prevEnd))![0].length
    if (text[at] === ',') commaBefore = at
  }
  // Alone on its line(s): the whole lines go, indentation and line end included
  const lineStart = text.lastIndexOf('\n', start - 1) + 1
  const eolAt = text.indexOf('\n', end)
  const aloneBefore = /^[ \t]*$/.test(text.slice(lineStart, start))
  // (A comment after it on its own line is about it, and goes with it.)
  if (aloneBefore && eolAt !== -1 && LINE_REST.test(text.slice(end, eolAt))) {
    start = lineStart
    end = eolAt + 1
  }
  const out = text.slice(0, start) + text.slice(end)
  return commaBefore === undefined ? out : out.slice(0, commaBefore) + out.slice(commaBefore + 1)
}

function nest(path: string[], value: unknown): unknown {
  return path.reduceRight((inner, k) => ({[k]: inner}), value)
}

/** The whitespace that starts the line holding `offset`. */
function indentAt(text: string, offset: number): string {
  const start = text.lastIndexOf('\n', offset - 1) + 1
  return /^[ \t]*/.exec(text.slice(start))![0]
}

/** Indentation and line ends as the file already has them (2 spaces and \n for a new file). */
function formattingOf(text: string): FormattingOptions & {eol: string} {
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  const indent = /\n([ \t]+)\S/.exec(text)?.[1]
  if (indent?.startsWith('\t')) return {insertSpaces: false, tabSize: 1, eol}
  return {insertSpaces: true, tabSize: indent ? indent.length : 2, eol}
}

function fail(file: string, text: string, offset: number, what: string): never {
  const before = text.slice(0, offset)
  const line = before.split('\n').length
  const column = offset - before.lastIndexOf('\n')
  throw new ToolgateError(
    'ERR_CONFIG_INVALID',
    `${file}:${line}:${column}: ${what}; fix the file (nothing was changed)`,
  )
}
