import {test} from 'node:test'
import assert from 'node:assert/strict'

/**
 * The `skip` option for tests that need a system component (Chromium, the OS keyring, nginx,
 * sshd…). Locally a missing component skips, with the reason (and `npm test` lists every skipped
 * test by name at the end, test/helpers/skip-reporter.ts). Under CI (`CI` set) nothing skips:
 * `.ci/run` installs every component, so a missing one is a failure: the dependent tests run (and
 * fail), and one test named after the component fails with the reason.
 */
export function needs(component: string, missing: string | false | undefined): string | false {
  if (!missing) return false
  if (!process.env.CI) return missing
  test(`component installed: ${component}`, () => {
    assert.fail(`${component} is required under CI (.ci/run installs it): ${missing}`)
  })
  return false
}
