/**
 * A real headless browser for the console's end-to-end tests: Debian's chromium driven by
 * playwright-core, in a fresh user-data directory removed on close. Fails (never skips) when
 * chromium is missing.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

export interface TestBrowser {
  readonly context: BrowserContext
  readonly page: Page
  /** PNG of the page under `docs/screenshots/` when CONSOLE_SCREENSHOTS=1, else in a temporary directory. */
  readonly screenshot: (name: string) => Promise<string>
  /** Messages the page logged as errors, and uncaught exceptions. */
  readonly pageErrors: Array<string>
  readonly close: () => Promise<void>
}

export const launchBrowser = async (): Promise<TestBrowser> => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian package chromium (apt-get install -y chromium)`)
  const userData = mkdtempSync(join(tmpdir(), "slipway-chromium-"))
  const shots = process.env.CONSOLE_SCREENSHOTS ? join(import.meta.dirname, "../../docs/screenshots") : join(userData, "screenshots")
  mkdirSync(shots, { recursive: true })
  let context: BrowserContext
  try {
    context = await chromium.launchPersistentContext(userData, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
      viewport: { width: 1280, height: 800 },
      deviceScaleFactor: 1,
      timezoneId: "UTC",
      locale: "en-US"
    })
  } catch (error) {
    rmSync(userData, { recursive: true, force: true })
    throw error
  }
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(10_000)
  const pageErrors: Array<string> = []
  page.on("pageerror", (error) => pageErrors.push(String(error)))
  page.on("console", (message) => {
    // A failed request (a 4xx the console shows to the user) is logged by the browser itself: not a page error.
    if (message.type() === "error" && !/Failed to load resource/.test(message.text())) pageErrors.push(message.text())
  })
  return {
    context,
    page,
    pageErrors,
    screenshot: async (name) => {
      const path = join(shots, `${name}.png`)
      await page.screenshot({ path, type: "png" })
      return path
    },
    close: async () => {
      await context.close()
      rmSync(userData, { recursive: true, force: true })
    }
  }
}
