// Loaded with `node --import` by a test: appends the name of every npm package the process
// resolves to the file named by RECORD_PACKAGES, one per line (what a process loads, not guessed),
// and every module of this project's src/lib as `src/lib/…` (so a test can show the hook saw the
// imports it asserts are absent).
import {appendFileSync} from 'node:fs'
import {registerHooks} from 'node:module'

// RECORD_PACKAGES_IF_ARG: record only in a process whose arguments hold it (NODE_OPTIONS reaches
// every Node process started below the one under test; this picks one of them).
const only = process.env.RECORD_PACKAGES_IF_ARG
const file = only && !process.argv.includes(only) ? undefined : process.env.RECORD_PACKAGES
const seen = new Set()
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context)
    const m =
      /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url) ??
      /\/(src\/lib\/[^?#]+)$/.exec(resolved.url)
    if (file && m && !seen.has(m[1])) {
      seen.add(m[1])
      appendFileSync(file, m[1] + '\n')
    }
    return resolved
  },
})
