import {test} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {dirname, join, resolve} from 'node:path'
import {COMMANDS} from '../../src/index.ts'

/**
 * README and docs/ name only commands and flags that exist (issue 18): every command line in a code
 * span or block (`toolgate …`, `bin/run.js …`, `bin/dev.js …`) is checked against the real oclif
 * command table (src/index.ts COMMANDS, with each command's flags and the shared base flags), so
 * commands that land later are covered without touching this test. Links to files must resolve.
 */
const root = join(import.meta.dirname, '..', '..')
const files = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]

type CommandClass = {
  flags?: Record<string, {char?: string; allowNo?: boolean}>
  baseFlags?: Record<string, unknown>
}
const table = new Map<string, CommandClass>(
  Object.entries(COMMANDS as Record<string, CommandClass>).map(([id, c]) => [
    id.replaceAll(':', ' '),
    c,
  ]),
)
const topics = new Set(
  [...table.keys()].filter((k) => k.includes(' ')).map((k) => k.split(' ')[0]!),
)

function flagsOf(c: CommandClass): Set<string> {
  const names = new Set(['help', 'version'])
  for (const [name, f] of Object.entries({...c.baseFlags, ...c.flags} as Record<
    string,
    {allowNo?: boolean}
  >)) {
    names.add(name)
    if (f?.allowNo) names.add(`no-${name}`)
  }
  return names
}

/** Code spans and lines of fenced blocks: where a reader copies commands from. */
function codeLines(text: string): string[] {
  const out: string[] = []
  let fenced = false
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced
      continue
    }
    if (fenced) out.push(line)
    else for (const m of line.matchAll(/`([^`]+)`/g)) out.push(m[1]!)
  }
  return out
}

const INVOCATION =
  /(?:^|[\s$(|;&])(?:\.\/build\/toolgate|build\/toolgate|toolgate|bin\/run\.js|bin\/dev\.js)\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?([^|;&#]*)/g

test('every command and flag named in README and docs exists', () => {
  const problems: string[] = []
  let checked = 0
  for (const file of files) {
    for (const line of codeLines(readFileSync(join(root, file), 'utf8'))) {
      for (const m of line.matchAll(INVOCATION)) {
        const [first, second, rest] = [m[1]!, m[2], m[3] ?? '']
        if (first === 'help' || first === 'version') continue
        let id: string | undefined
        if (second && table.has(`${first} ${second}`)) id = `${first} ${second}`
        else if (table.has(first)) id = first
        // A topic alone (`toolgate secret`) names the group, as `toolgate secret --help` shows it.
        if (!id && topics.has(first) && !second) continue
        if (!id) {
          problems.push(
            `${file}: "${m[0].trim()}": no command "${topics.has(first) ? `${first} ${second ?? ''}`.trim() : first}"`,
          )
          continue
        }
        checked++
        const tail = (id.includes(' ') || !second ? '' : ` ${second}`) + rest
        const known = flagsOf(table.get(id)!)
        for (const f of tail.matchAll(/(?:^|\s)--([a-z][a-z0-9-]*)/g)) {
          if (!known.has(f[1]!))
            problems.push(`${file}: "${m[0].trim()}": "${id}" has no flag --${f[1]}`)
        }
      }
    }
  }
  assert.deepEqual(problems, [])
  assert.ok(checked >= 20, `only ${checked} command lines found: is the pattern still right?`)
})

test('every relative link in README and docs points to a file in the repo', () => {
  const missing: string[] = []
  for (const file of files) {
    // Code spans hold regular expressions such as `[a-z](…)`, not links.
    const text = readFileSync(join(root, file), 'utf8').replace(/`[^`\n]*`/g, '')
    for (const m of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      const target = m[1]!
      if (/^[a-z]+:/.test(target)) continue
      if (!existsSync(resolve(dirname(join(root, file)), target)))
        missing.push(`${file}: ${target}`)
    }
  }
  assert.deepEqual(missing, [])
})
