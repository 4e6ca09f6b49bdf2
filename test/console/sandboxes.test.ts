/**
 * The console's sandbox pages in a real browser against real servers: templates, pools, volumes
 * (sizes and their total; the quota is not exposed), sandboxes with their status, an error from
 * the create form, and a box's page: on the simulated runtime (no dataplane) it says the runtime
 * cannot execute; on the local runtime its terminal runs commands in the real box.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
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

  it("shows what each box was made from: its template, its snapshot by name, or the default image", async () => {
    const r = server.request
    const snapshot = await ok(r("POST", "/v2/sandboxes/snapshots", { body: { name: "tools-v1", docker_image: "busybox:1.36", fs_capacity_bytes: 1024 ** 3 } }))
    await ok(r("POST", "/v2/sandboxes/boxes", { body: { snapshot_id: snapshot.id, name: "from-snapshot" } }))
    await ok(r("POST", "/v2/sandboxes/boxes", { body: { name: "from-image" } }))
    const { page } = browser
    await page.click("nav >> text=Sandboxes")
    const source = (name: string) => page.locator(`#boxes tr[data-name="${name}"] .box-source`)
    await source("from-snapshot").filter({ hasText: "tools-v1" }).waitFor()
    expect(await source("from-snapshot").textContent()).toBe("snapshot tools-v1 (busybox:1.36)")
    expect(await source("from-image").textContent()).toBe("image python:3.12-slim")
    expect(await source("scratch").textContent()).toBe("python")
    await page.click('#boxes tr[data-name="from-snapshot"] a')
    await page.locator(".facts .box-source", { hasText: "snapshot tools-v1" }).waitFor()
    expect(browser.pageErrors).toEqual([])
  })
})

describe("console: a box's terminal on the local runtime", () => {
  // A real server with the `local` runtime: the box runs under bubblewrap from an image pulled
  // from a real registry (the test's mirror of Docker Hub), and its dataplane answers at
  // {server}/sandboxes/{id}, the console's own origin.
  let mirror: ImageMirror
  let server: TestServer

  beforeAll(async () => {
    mirror = await startImageMirror()
    server = await startTestServer({ runtime: "local" })
    await ok(server.request("POST", "/v2/sandboxes/templates", { body: { name: "shell", image: "python:3.12-slim", resources: { cpu: "500m", memory: "256Mi" } } }))
    await ok(server.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "shell", name: "dev", wait_for_ready: true, timeout: 120 } }))
  }, 180_000)

  afterAll(async () => {
    await server?.close()
    await mirror?.stop()
  }, 60_000)

  it("runs commands in the box and shows stdout, stderr and the exit code", async () => {
    const { page } = browser
    const dataplaneCalls: Array<{ url: string; key: string | undefined }> = []
    page.on("request", (request) => {
      if (request.url().includes("/sandboxes/") && request.url().endsWith("/execute")) dataplaneCalls.push({ url: request.url(), key: request.headers()["x-api-key"] })
    })
    await signIn(server)
    await page.click("nav >> text=Sandboxes")
    await page.locator('#boxes tr[data-name="dev"] [data-status=ready]').waitFor()
    await page.click('#boxes tr[data-name="dev"] a')
    const terminal = page.locator("#terminal")
    await terminal.waitFor()
    const input = terminal.locator("input[aria-label=command]")
    await input.fill("echo hello from the box; echo oops >&2; exit 3")
    await input.press("Enter")
    await terminal.locator(".stdout", { hasText: "hello from the box" }).waitFor({ timeout: 30_000 })
    expect(await terminal.locator(".stderr").last().textContent()).toContain("oops")
    expect(await terminal.locator(".exit").last().textContent()).toBe("exit code 3")
    await input.fill("echo persisted > /home/user/note && cat /home/user/note && pwd")
    await input.press("Enter")
    await terminal.locator(".stdout", { hasText: "persisted" }).waitFor({ timeout: 30_000 })
    expect(await terminal.locator(".stdout").last().textContent()).toContain("/home/user")
    // History: Up recalls the last command.
    await input.press("ArrowUp")
    expect(await input.inputValue()).toContain("echo persisted")
    // The console called the box's dataplane_url on its own origin with the signed-in key.
    const { body: box } = await server.request("GET", "/v2/sandboxes/boxes/dev")
    expect(box.dataplane_url).toBe(`${server.url}/sandboxes/${box.id}`)
    expect(dataplaneCalls).toEqual([
      { url: `${box.dataplane_url}/execute`, key: server.key },
      { url: `${box.dataplane_url}/execute`, key: server.key }
    ])
    await browser.screenshot("console-terminal")
    expect(browser.pageErrors).toEqual([])
  })

  it("shows a box that failed with its cause, and offers no terminal for it", async () => {
    await ok(server.request("POST", "/v2/sandboxes/templates", { body: { name: "missing", image: "nosuchimage:1", resources: { cpu: "500m", memory: "256Mi" } } }))
    const created = await server.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "missing", name: "broken", wait_for_ready: true, timeout: 60 } })
    expect(created.status).toBe(422)
    const { page } = browser
    await page.click("nav >> text=Sandboxes")
    const row = page.locator('#boxes tr[data-name="broken"]')
    await row.locator("[data-status=failed]").waitFor()
    expect(await row.textContent()).toContain("image pull failed: pull docker.io/library/nosuchimage:1")
    expect(await row.textContent()).toContain("none (failed)")
    await row.locator("a").click()
    const notice = page.locator("#box-failed")
    await notice.waitFor()
    expect(await notice.textContent()).toContain(`through the Docker Hub mirror ${mirror.host}`)
    expect(await page.locator("#terminal").count()).toBe(0)
    await browser.screenshot("console-box-failed")
    expect(browser.pageErrors).toEqual([])
  })
})
