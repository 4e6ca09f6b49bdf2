/**
 * /docs in a real browser (Debian's chromium through playwright-core) against a real server: the
 * reference renders from /openapi.json with Swagger UI served by Slipway itself (no request
 * leaves the server's origin), Authorize sends X-Api-Key and X-Tenant-Id, and "Execute" runs an
 * operation against the server: refused without a key (401), refused for a tenant the key does
 * not grant (403), and a deployment created once both are right.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, type TestBrowser } from "../console/browser.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const DEFAULT_TENANT = "00000000-0000-4000-8000-000000000001"
const OTHER_TENANT = "6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60"

let server: TestServer
let browser: TestBrowser
const foreignRequests: Array<string> = []

beforeAll(async () => {
  server = await startTestServer()
  browser = await launchBrowser()
  browser.page.on("request", (request) => {
    if (!request.url().startsWith(server.url) && !request.url().startsWith("data:")) foreignRequests.push(request.url())
  })
})

afterAll(async () => {
  await browser?.close()
  await server?.close()
})

const operation = (tag: string, id: string) => browser.page.locator(`#operations-${tag}-${id}`)

/** Expands an operation, executes it (with a JSON body when given) and answers the status Swagger UI shows. */
const execute = async (tag: string, id: string, body?: unknown): Promise<{ status: number; text: string }> => {
  const block = operation(tag, id)
  if (!(await block.locator(".opblock-body").isVisible())) await block.locator(".opblock-summary").first().click()
  if (body !== undefined) await block.locator("textarea.body-param__text").fill(JSON.stringify(body))
  // A previous answer is cleared so the one read below is this execution's.
  const clear = block.locator("button.btn-clear")
  if (await clear.isVisible()) await clear.click()
  await block.locator("button.execute").click()
  const status = block.locator(".live-responses-table tbody .response-col_status").first()
  await status.waitFor()
  const text = await block.locator(".live-responses-table tbody .response-col_description").first().innerText()
  return { status: Number((await status.innerText()).trim()), text }
}

/** Fills one security scheme of the Authorize dialog (it must be logged out) and authorizes it. */
const authorize = async (scheme: string, value: string) => {
  const { page } = browser
  await page.locator(".auth-wrapper button.authorize").click()
  const container = page.locator(".modal-ux .auth-container").filter({ has: page.locator("h4 code", { hasText: new RegExp(`^${scheme}$`) }) })
  const logout = container.locator("button:has-text('Logout')")
  if (await logout.isVisible()) await logout.click()
  await container.locator("input").first().fill(value)
  await container.locator("button.authorize").click()
  await container.locator("button:has-text('Logout')").waitFor()
  await container.locator("button.btn-done").click()
}

describe("/docs", () => {
  it("renders Swagger UI from /openapi.json, every file from this server", async () => {
    const { page } = browser
    const response = await page.goto(server.url + "/docs")
    expect(response?.status()).toBe(200)
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'")
    await page.locator(".swagger-ui .info .title").filter({ hasText: "Slipway" }).waitFor()
    await operation("deployments", "createDeployment").waitFor()
    await operation("sandboxes", "createBox").waitFor()
    expect(foreignRequests).toEqual([])
    expect(browser.pageErrors).toEqual([])
  })

  it("shows each field's constraints and examples from the core's schemas", async () => {
    const block = operation("sandboxes", "createVolume")
    await block.locator(".opblock-summary").first().click()
    // The example body is built from the schema's examples.
    const example = JSON.parse(await block.locator("textarea.body-param__text").inputValue())
    expect(example).toMatchObject({ name: "my-sandbox", size: "10Gi" })
    // The request body's schema view states the DNS-label pattern and length, the quantity grammar and the timeout's range.
    await block.locator(".opblock-section-request-body button[data-name='model']").click()
    const model = await block.locator(".opblock-section-request-body .model-box").first().innerText()
    expect(model).toContain("[1, 63] characters")
    expect(model).toContain("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    expect(model).toMatch(/Ki\|Mi\|Gi/)
    expect(model).toMatch(/timeout[\s\S]*integer\[1, 3600\]/)
    await block.locator(".opblock-summary").first().click()
    expect(browser.pageErrors).toEqual([])
  })

  it("tries an operation: 401 without a key, 403 for a tenant the key does not grant, 201 once authorized", async () => {
    const denied = await execute("deployments", "listDeployments")
    expect(denied.status).toBe(401)

    await authorize("ApiKey", server.key)
    await authorize("TenantId", OTHER_TENANT)
    const forbidden = await execute("deployments", "createDeployment", {
      name: "from-docs",
      source: "external_container",
      source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0" }
    })
    expect(forbidden.status).toBe(403)

    await authorize("TenantId", DEFAULT_TENANT)
    const created = await execute("deployments", "createDeployment", {
      name: "from-docs",
      source: "external_container",
      source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0" }
    })
    expect(created.status, created.text).toBe(201)
    expect(created.text).toContain('"name": "from-docs"')

    // The deployment exists on the server, in the tenant the page named.
    const listed = await server.request("GET", "/v2/deployments?name_contains=from-docs", { tenant: DEFAULT_TENANT })
    expect(listed.body.resources.map((d: { name: string }) => d.name)).toEqual(["from-docs"])
    expect(foreignRequests).toEqual([])
    await operation("deployments", "createDeployment").locator(".live-responses-table").scrollIntoViewIfNeeded()
    await browser.screenshot("docs")
  })

  it("serves only the reference's own files under /docs/", async () => {
    for (const [path, type] of [
      ["/docs/swagger-ui-bundle.js", "text/javascript"],
      ["/docs/swagger-ui.css", "text/css"],
      ["/docs/slipway-docs.js", "text/javascript"]
    ] as const) {
      const response = await fetch(server.url + path)
      expect(response.status, path).toBe(200)
      expect(response.headers.get("content-type"), path).toContain(type)
      const again = await fetch(server.url + path, { headers: { "if-none-match": response.headers.get("etag")! } })
      expect(again.status, path).toBe(304)
    }
    for (const path of ["/docs/package.json", "/docs/..%2Fpackage.json", "/docs/index.html", "/docs/%2Fetc%2Fpasswd"]) {
      expect((await fetch(server.url + path)).status, path).toBe(404)
    }
  })
})
