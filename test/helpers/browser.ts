import {existsSync} from 'node:fs'
import {chromium, type Browser} from 'playwright-core'

/**
 * Real headless Chromium (Debian `chromium`, driven by playwright-core) for the one test per flow
 * that must see a real browser. Flags from testing.md: no sandbox (containers), no GPU, no QUIC,
 * nothing that phones home. `available` is false when the binary is missing, so a test can skip
 * with a clear reason (CI installs it, so CI never skips).
 */
export const CHROMIUM_PATH = process.env.TOOLGATE_TEST_CHROMIUM ?? '/usr/bin/chromium'

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH)
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
    headless: true,
    timeout: 60_000,
  })
}
