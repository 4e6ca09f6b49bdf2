/**
 * The console's sandbox pages in a real browser against real servers: templates, pools, volumes
 * (sizes and their total; the quota is not exposed), sandboxes with their status, an error from
 * the create form, and a box's page: without a dataplane it says the runtime cannot execute; with
 * the real dataplane (server/sandboxes/dataplane over a bubblewrap box) its terminal runs commands.
 */
import { Layer } from "effect"
import type { Route } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Dataplane } from "../../server/sandboxes/Dataplane.ts"
import { sandboxModule } from "../../server/sandboxes/module.ts"
import { modules } from "../../server/modules.ts"
import { makeBwrapBox, type TestBox } from "../support/bwrap-box.ts"
import { startDataplaneServer, type DataplaneServer } from "../support/dataplane-server.ts"
import { eventually, startTestServer, type TestServer } from "../support/server.ts"
import { launchBrowser, type TestBrowser } from "./browser.ts"

let browser: TestBrowser

beforeAll(async () => {
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
})

const signIn = async (server: TestServer) => {
  const { page } = browser
  await page.goto(server.url + "/console")
  await page.evaluate(() => sessionStorage.clear())
  await page.reload()
  await page.fill("input[name=api_key]", server.key)
  await page.click("form#signin button[type=submit]")
  await page.getByRole("heading", { name: "Deployments" }).waitFor()
}

const ok = async (promise: Promise<{ status: number; body: any }>) => {
  const { status, body } = await promise
  if (status >= 300) throw new Error(`${status} ${JSON.stringify(body)}`)
  return body
}

describe("console: sandboxes on a runtime that cannot execute", () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer()
    const r = server.request
    await ok(r("POST", "/v2/sandboxes/volumes", { body: { name: "data", size: "10Gi" } }))
    await ok(r("POST", "/v2/sandboxes/volumes", { body: { name: "cache", size: "512Mi" } }))
    await ok(r("POST", "/v2/sandboxes/templates", { body: { name: "python", image: "python:3.12-slim", volume_mounts: [{ volume_name: "data", mount_path: "/data" }] } }))
    await ok(r("POST", "/v2/sandboxes/templates", { body: { name: "shell", image: "busybox:1.36", resources: { cpu: "250m", memory: "256Mi" } } }))
    await ok(r("POST", "/v2/sandboxes/pools", { body: { name: "warm", template_name: "shell", replicas: 2 } }))
    await ok(r("POST", "/v2/sandboxes/boxes", { body: { template_name: "python", name: "scratch" } }))
  })

  afterAll(async () => {
    await server?.close()
  })

  it("shows volumes with their sizes and total, and says the quota is not exposed", async () => {
    const { page } = browser
    await signIn(server)
    await page.click("nav >> text=Volumes")
    await page.locator('#volumes tr[data-name="data"]').waitFor()
    const usage = await page.locator("#volume-usage").textContent()
    expect(usage).toContain("10.5 GiB allocated in 2 volumes")
    expect(usage).toContain("quota is not exposed by the API")
    expect(await page.locator('#volumes tr[data-name="data"]').textContent()).toContain("python")
    expect(await page.locator('#volumes tr[data-name="cache"]').textContent()).toContain("unused")
    await browser.screenshot("console-volumes")
  })

  it("shows templates and pools with their sandboxes' status", async () => {
    const { page } = browser
    await page.click("nav >> text=Templates")
    const shell = page.locator('#templates tr[data-name="shell"]')
    await shell.waitFor()
    expect(await shell.textContent()).toContain("250m")
    await page.click("nav >> text=Pools")
    await page.locator('#pools tr[data-name="warm"]', { hasText: "2/2 ready" }).waitFor()
  })

  it("lists sandboxes with their status; the create form shows the server's error", async () => {
    const { page } = browser
    await page.click("nav >> text=Sandboxes")
    await page.locator('#boxes tr[data-name="scratch"] [data-status=ready]').waitFor()
    expect(await page.locator("#boxes tbody tr").count()).toBe(3)
    await page.selectOption("#create-box select[name=template_name]", "shell")
    await page.fill("#create-box input[name=name]", "Not A Label")
    await page.click("#create-box button[type=submit]")
    const alert = page.locator("#create-box [role=alert]")
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/Error 422.*name/)
    await page.fill("#create-box input[name=name]", "scratch")
    await page.click("#create-box button[type=submit]")
    await page.locator("#create-box [role=alert]", { hasText: "409" }).waitFor()
    await browser.screenshot("console-sandboxes")
  })

  it("a box page says when the runtime cannot execute", async () => {
    const { page } = browser
    await page.click('#boxes tr[data-name="scratch"] a')
    await page.locator("#no-dataplane").waitFor()
    expect(await page.locator("#no-dataplane").textContent()).toContain("cannot execute")
    expect(await page.locator("#terminal").count()).toBe(0)
    expect(browser.pageErrors).toEqual([])
  })
})

describe("console: a box's terminal over the real dataplane", () => {
  let server: TestServer
  let dataplane: DataplaneServer
  let box: TestBox
  const boxes: Record<string, TestBox> = {}

  beforeAll(async () => {
    box = makeBwrapBox()
    dataplane = await startDataplaneServer(boxes)
    // The sandbox area as the server has it, with a dataplane that answers at the dataplane server.
    const withDataplane = {
      ...sandboxModule,
      layer: Layer.merge(sandboxModule.layer!, Layer.succeed(Dataplane, Dataplane.of({ name: "test", urlFor: (id) => dataplane.boxUrl(id) })))
    }
    server = await startTestServer({ modules: modules.map((module) => (module === sandboxModule ? withDataplane : module)) })
    await ok(server.request("POST", "/v2/sandboxes/templates", { body: { name: "shell", image: "busybox:1.36" } }))
    const created = await ok(server.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "shell", name: "dev" } }))
    boxes[created.id] = box
  })

  afterAll(async () => {
    await browser?.page.unrouteAll({ behavior: "ignoreErrors" })
    await server?.close()
    await dataplane?.close()
    await box?.dispose()
  })

  it("runs commands in the box and shows stdout, stderr and the exit code", async () => {
    const { page } = browser
    // The server mounts the dataplane on its own origin; here it listens on another port, so the
    // browser's requests to it are passed through unchanged (the dataplane server's key is the
    // one it checks, as the server's own keys would be).
    const sentKeys = new Set<string>()
    await page.route(`${dataplane.url}/**`, async (route: Route) => {
      const request = route.request()
      const cors = { "access-control-allow-origin": server.url, "access-control-allow-headers": "content-type, x-api-key, x-tenant-id", "access-control-allow-methods": "POST" }
      if (request.method() === "OPTIONS") return route.fulfill({ status: 204, headers: cors })
      sentKeys.add(request.headers()["x-api-key"] ?? "")
      const response = await route.fetch({ headers: { ...request.headers(), "x-api-key": dataplane.apiKey } })
      await route.fulfill({ response, headers: { ...response.headers(), ...cors } })
    })
    await signIn(server)
    await page.click("nav >> text=Sandboxes")
    await page.click('#boxes tr[data-name="dev"] a')
    const terminal = page.locator("#terminal")
    await terminal.waitFor()
    const input = terminal.locator("input[aria-label=command]")
    await input.fill("echo hello from $(hostname); echo oops >&2; exit 3")
    await input.press("Enter")
    await terminal.locator(".stdout", { hasText: "hello from box" }).waitFor()
    expect(await terminal.locator(".stderr").last().textContent()).toContain("oops")
    expect(await terminal.locator(".exit").last().textContent()).toBe("exit code 3")
    await input.fill("echo persisted > /home/user/note && cat /home/user/note && ls /")
    await input.press("Enter")
    await terminal.locator(".stdout", { hasText: "persisted" }).waitFor()
    // History: Up recalls the last command.
    await input.press("ArrowUp")
    expect(await input.inputValue()).toContain("echo persisted")
    // The console sent the signed-in key, as the dataplane protocol asks (X-Api-Key).
    expect([...sentKeys]).toEqual([server.key])
    await eventually(async () => (box.running() === 0 ? true : undefined))
    await browser.screenshot("console-terminal")
    expect(browser.pageErrors).toEqual([])
  })
})
