import assert from 'node:assert/strict'
import {after, before, describe, it} from 'node:test'
import type {Browser, Page} from 'playwright-core'
import {MemoryTokenStore, startRemoteAuth} from '../../../src/lib/oauth/index.ts'
import {chromiumAvailable, launchChromium, CHROMIUM_PATH} from '../../helpers/browser.ts'
import {
  freePort,
  startLoginProvider,
  startProtectedResource,
  type ProtectedResource,
} from '../../helpers/oidc-login.ts'
import {needs} from '../../helpers/component.ts'

const AUDIENCE = 'https://mcp.example.test/mcp'

describe(
  'remote OAuth login in a real browser',
  {skip: needs('Chromium', !chromiumAvailable() && `no Chromium at ${CHROMIUM_PATH}`)},
  () => {
    let idp: Awaited<ReturnType<typeof startLoginProvider>>
    let upstream: ProtectedResource
    let browser: Browser
    before(async () => {
      idp = await startLoginProvider()
      upstream = await startProtectedResource(idp.issuer, AUDIENCE)
      browser = await launchChromium()
    })
    after(async () => {
      await browser?.close()
      await upstream?.close()
      await idp?.close()
    })

    it('opens the browser on the login page, and the user signs in and consents there', async () => {
      const page: Page = await browser.newPage()
      const events: string[] = []
      let finalPage: Promise<string> | undefined
      // The "system browser" is real Chromium: the login opens the URL there, a person types there.
      const openBrowser = async (url: string) => {
        await page.goto(url)
        finalPage = (async () => {
          await page.fill('input[name="login"]', 'dora')
          await page.fill('input[name="password"]', 'any-password')
          await page.click('button[type="submit"]')
          await page.waitForSelector('button[type="submit"]', {timeout: 30_000}) // consent page
          await page.click('button[type="submit"]')
          await page.waitForURL(/127\.0\.0\.1:\d+\/callback/, {timeout: 30_000})
          return (await page.textContent('body')) ?? ''
        })()
        finalPage.catch(() => {})
      }
      const source = await startRemoteAuth(
        {
          targetUri: new URL(upstream.url),
          issuer: new URL(idp.issuer),
          callbackPort: await freePort(),
          skipBrowser: false,
          timeoutMs: 60_000,
          resource: AUDIENCE,
        },
        {store: new MemoryTokenStore(), progress: (e) => events.push(e.event), openBrowser},
      )
      try {
        assert.deepEqual(events, [
          'discovered',
          'registered',
          'browser_opening',
          'waiting',
          'logged_in',
        ])
        assert.match(await (finalPage as Promise<string>), /Logged in as dora/)
        const res = await fetch(upstream.url, {
          headers: {authorization: `Bearer ${await source.getToken()}`},
        })
        assert.equal(res.status, 200)
        await res.body?.cancel()
      } finally {
        await source.close()
        await page.close()
      }
    })
  },
)
