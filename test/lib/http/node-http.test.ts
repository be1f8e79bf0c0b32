import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {readdirSync, readFileSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, it} from 'node:test'

/**
 * An ESM import of node:http makes Node load and compile the undici bundled inside it (~12 MB of
 * resident memory, issue 11), because building the namespace reads the lazy WebSocket getters.
 * src/lib/http/node-http.ts takes node:http's values without that; these tests keep it so.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const NODE_HTTP = join(ROOT, 'src/lib/http/node-http.ts')

/** Whether a fresh Node process running `code` (an ES module) has loaded Node's internal undici. */
function loadsBundledUndici(code: string): boolean {
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `${code}\nconsole.log(process.moduleLoadList.some((m) => m.includes('internal/deps/undici')))`,
    ],
    {encoding: 'utf8'},
  )
  return out.trim() === 'true'
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) =>
    e.isDirectory()
      ? sourceFiles(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  )
}

describe('node:http without its namespace', () => {
  it("an ESM import of node:http loads Node's bundled undici (the control)", () => {
    assert.equal(
      loadsBundledUndici("import {createServer} from 'node:http'\nvoid createServer"),
      true,
    )
  })

  it('node-http.ts gives createServer, request and Agent without loading it', () => {
    const code =
      `import {Agent, createServer, request} from ${JSON.stringify(NODE_HTTP)}\n` +
      "if (typeof createServer !== 'function' || typeof request !== 'function' || typeof Agent !== 'function') throw new Error('missing')"
    assert.equal(loadsBundledUndici(code), false)
  })

  it('no module under src imports values from node:http or node:https (types only)', () => {
    const offenders: string[] = []
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/^import\s+(type\s+)?([^'"]*?)\s*from\s*'(node:https?)'/gm)) {
        if (m[1]) continue // import type {…}
        // import {type A, b}: a value import when any name lacks its own `type`
        const names = /^\{([^}]*)\}$/.exec(m[2]!.trim())?.[1]?.split(',') ?? [m[2]!]
        if (names.some((n) => n.trim() && !/^type\s/.test(n.trim())))
          offenders.push(`${relative(ROOT, file)}: ${m[0].replace(/\s+/g, ' ')}`)
      }
    }
    assert.deepEqual(offenders, [])
  })
})
