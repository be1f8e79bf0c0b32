// Loaded with `node --import` by a test: appends the name of every npm package the process
// resolves to the file named by RECORD_PACKAGES, one per line (what a process loads, not guessed).
import {appendFileSync} from 'node:fs'
import {registerHooks} from 'node:module'

const file = process.env.RECORD_PACKAGES
const seen = new Set()
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context)
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url)
    if (file && m && !seen.has(m[1])) {
      seen.add(m[1])
      appendFileSync(file, m[1] + '\n')
    }
    return resolved
  },
})
