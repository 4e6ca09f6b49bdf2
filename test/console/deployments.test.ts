/**
 * The console's deployment flow in a real browser against a real server: sign in, a bad input's
 * 422 shown next to the form, create a deployment and watch it reach DEPLOYED, deploy a second
 * image, roll back to the first, follow its logs as they arrive, delete with confirmation.
 *
 * The server gets the log endpoints wired here to the real log store (server/deployments/logs/index.ts),
 * ahead of the default modules, so the test can append lines while the page follows them.
 */
import { Effect, Exit, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { logEndpoints } from "../../core/api/logs.ts"
import { buildLogs, deployLogs, type LogStore, makeFileLogStore } from "../../server/deployments/logs/index.ts"
import { implement, type ServerModule } from "../../server/module.ts"
import { modules } from "../../server/modules.ts"
import { eventually, startTestServer, type TestServer } from "../support/server.ts"
import { launchBrowser, type TestBrowser } from "./browser.ts"

let server: TestServer
let browser: TestBrowser
let logs: LogStore["Service"]
let logRoot: string
const logScope = Scope.makeUnsafe()

const logModule = (store: LogStore["Service"]): ServerModule<never> => ({
  name: "test-logs",
  routes: Effect.succeed([
    implement(logEndpoints.getBuildLogs, ({ params, body }) => Effect.orDie(buildLogs(store, params.deployment_id, params.revision_id, body))),
    implement(logEndpoints.getDeployLogs, ({ params, body }) => Effect.orDie(deployLogs(store, params.deployment_id, body)))
  ])
})

beforeAll(async () => {
  logRoot = mkdtempSync(join(tmpdir(), "slipway-console-logs-"))
  logs = Effect.runSync(Scope.provide(logScope)(makeFileLogStore({ root: logRoot })))
  server = await startTestServer({ revisionStepMs: 150, modules: [logModule(logs), ...modules] })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await server?.close()
  Effect.runSync(Scope.close(logScope, Exit.void))
  rmSync(logRoot, { recursive: true, force: true })
})

describe("console: deployments", () => {
  it("serves the console at /console and redirects / there", async () => {
    const root = await fetch(server.url + "/", { redirect: "manual" })
    expect(root.status).toBe(302)
    expect(root.headers.get("location")).toBe("/console")
    const { page } = browser
    await page.goto(server.url + "/")
    expect(new URL(page.url()).pathname).toBe("/console")
    await expect(page.locator("form#signin")).toBeTruthy()
    await page.locator("form#signin").waitFor()
  })

  it("refuses a wrong key with the server's message, then signs in; the key stays in sessionStorage only", async () => {
    const { page } = browser
    await page.fill("input[name=api_key]", "slw_wrong_key")
    await page.click("form#signin button[type=submit]")
    const alert = page.locator("form#signin [role=alert]")
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/Error 401/)
    await browser.screenshot("console-signin")

    await page.fill("input[name=api_key]", server.key)
    await page.click("form#signin button[type=submit]")
    await page.getByRole("heading", { name: "Deployments" }).waitFor()
    await page.getByText("No deployments yet").waitFor()
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem("slipway.apiKey"), local: JSON.stringify(localStorage) }))
    expect(stored.session).toBe(server.key)
    expect(stored.local).not.toContain(server.key)
  })

  it("shows the 422 detail next to the form for an invalid name", async () => {
    const { page } = browser
    await page.click("text=New deployment")
    await page.fill("#create-deployment input[name=name]", "Bad Name")
    await page.fill("#create-deployment input[name=image_uri]", "registry.example.com/acme/shop:1")
    await page.click("#create-deployment button[type=submit]")
    const alert = page.locator("#create-deployment [role=alert]")
    await alert.waitFor()
    const text = await alert.textContent()
    expect(text).toContain("Error 422")
    expect(text).toMatch(/name: Input should contain only lowercase letters, digits/)
    await browser.screenshot("console-error")
    // A secrets line that is not NAME=value is refused before anything is sent.
    await page.fill("#create-deployment input[name=name]", "shop")
    await page.fill("#create-deployment textarea[name=secrets]", "no equals sign")
    await page.click("#create-deployment button[type=submit]")
    await page.locator("#create-deployment [role=alert]", { hasText: "secrets line 1" }).waitFor()
    expect((await server.request("GET", "/v2/deployments")).body.resources).toHaveLength(0)
  })

  let deploymentId = ""
  let firstRevision = ""

  it("creates a deployment and watches its revision reach DEPLOYED", async () => {
    const { page } = browser
    await page.fill("#create-deployment textarea[name=secrets]", "API_TOKEN=s3cret")
    await page.click("#create-deployment button[type=submit]")
    await page.waitForURL(/#\/deployments\/[0-9a-f-]{36}$/)
    deploymentId = page.url().split("/").pop()!
    // The timeline shows the revision moving through its states, then DEPLOYED and active.
    const revision = page.locator("#revisions li").first()
    await revision.locator("[data-status=DEPLOYED]").waitFor()
    firstRevision = (await revision.getAttribute("data-revision"))!
    await revision.getByText("active").waitFor()
    await page.locator("h2 [data-status=READY]").waitFor()
    await page.getByText("API_TOKEN").waitFor()
    const api = await server.request("GET", `/v2/deployments/${deploymentId}`)
    expect(api.body.active_revision_id).toBe(firstRevision)
  })

  it("follows the logs as they arrive", async () => {
    const { page } = browser
    const buildPanel = page.locator(".logs", { hasText: "Build log" })
    await buildPanel.getByText("No logs yet.").waitFor()
    Effect.runSync(logs.append(deploymentId, firstRevision, "build", { message: "pulling registry.example.com/acme/shop:1" }))
    await buildPanel.getByText("pulling registry.example.com/acme/shop:1").waitFor()
    Effect.runSync(logs.append(deploymentId, firstRevision, "build", { message: "ERROR: layer 3 retried", level: "ERROR" }))
    await buildPanel.getByText("layer 3 retried").waitFor()
    Effect.runSync(logs.append(deploymentId, firstRevision, "deploy", { message: "listening on :8000", stream: "stdout" }))
    const runtimePanel = page.locator(".logs", { hasText: "Runtime log" })
    await runtimePanel.getByText("listening on :8000").waitFor()
    // Each line is shown once, however often the page polled.
    await page.waitForTimeout(1500)
    expect(await buildPanel.locator(".line").count()).toBe(2)
  })

  it("deploys another image, then rolls back to the first revision with confirmation", async () => {
    const { page } = browser
    await page.fill("#new-image input[name=image_uri]", "registry.example.com/acme/shop:2")
    await page.click("#new-image button[type=submit]")
    await expect.poll(() => page.locator("#revisions li").count()).toBe(2)
    const newest = page.locator("#revisions li").first()
    await newest.locator("[data-status=DEPLOYED]").waitFor()
    await newest.getByText("active").waitFor()
    const older = page.locator(`#revisions li[data-revision="${firstRevision}"]`)
    expect(await older.getByText("active").count()).toBe(0)

    await older.getByRole("button", { name: "Redeploy" }).click()
    const dialog = page.locator("dialog.confirm")
    await dialog.waitFor()
    // Cancel first: nothing changes.
    await dialog.getByRole("button", { name: "Cancel" }).click()
    await dialog.waitFor({ state: "detached" })
    expect((await server.request("GET", `/v2/deployments/${deploymentId}`)).body.active_revision_id).not.toBe(firstRevision)

    await older.getByRole("button", { name: "Redeploy" }).click()
    await page.locator("dialog.confirm").waitFor()
    await browser.screenshot("console-rollback")
    await page.locator("dialog.confirm").getByRole("button", { name: "Redeploy" }).click()
    await older.getByText("active").waitFor()
    expect(await page.locator("dl.facts").textContent()).toMatch(/Runningregistry\.example\.com\/acme\/shop:1/)
    await eventually(async () => ((await server.request("GET", `/v2/deployments/${deploymentId}`)).body.active_revision_id === firstRevision ? true : undefined))
    await older.getByRole("button", { name: "Logs" }).click()
    await page.locator(".logs", { hasText: "pulling registry.example.com/acme/shop:1" }).waitFor()
    await browser.screenshot("console-deployment")
  })

  it("lists the deployment with its status", async () => {
    const { page } = browser
    await page.click("nav >> text=Deployments")
    const row = page.locator('#deployments tr[data-name="shop"]')
    await row.locator("[data-status=READY]").waitFor()
    // The deployment's own config is the latest revision's; the list says the active one is older.
    expect(await row.textContent()).toContain("registry.example.com/acme/shop:2")
    expect(await row.textContent()).toContain("active: older revision")
    await page.fill("input[aria-label='filter by name']", "nomatch")
    await page.getByText("No deployment matches the filter.").waitFor()
    await page.fill("input[aria-label='filter by name']", "sho")
    await row.waitFor()
    await browser.screenshot("console-deployments")
  })

  it("deletes the deployment after confirmation", async () => {
    const { page } = browser
    await page.click('#deployments tr[data-name="shop"] a')
    await page.getByRole("button", { name: "Delete…" }).click()
    await page.locator("dialog.confirm").getByRole("button", { name: "Delete deployment" }).click()
    await page.waitForURL(/#\/deployments$/)
    await eventually(async () => {
      const { status, body } = await server.request("GET", `/v2/deployments/${deploymentId}`)
      return status === 404 || body.status === "AWAITING_DELETE" ? true : undefined
    })
  })

  it("switching to a tenant the key does not grant shows the server's answer; signing out forgets the key", async () => {
    const { page } = browser
    await page.fill("#tenant input[name=tenant_id]", "6f1c0000-0000-4000-8000-000000000abc")
    await page.click("#tenant button[type=submit]")
    const alert = page.locator("#tenant [role=alert]")
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/Error 40[34]/)
    await page.click("#signout")
    await page.locator("form#signin").waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem("slipway.apiKey"))).toBeNull()
    expect(browser.pageErrors).toEqual([])
  })
})
