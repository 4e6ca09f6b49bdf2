/**
 * A request that only waits (`wait_for_ready`) ends when its client goes away, while what it
 * committed goes on: the box it created keeps provisioning in the controller (here: its image
 * pull, from a registry that never answers, is still running), and deleting the box ends that.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { processesMentioning, startSilentRegistry } from "../support/silent.ts"

let silent: Awaited<ReturnType<typeof startSilentRegistry>>
let host: string
let t: TestServer
const logs: Array<string> = []
const saved = process.env.SLIPWAY_INSECURE_REGISTRIES

beforeAll(async () => {
  silent = await startSilentRegistry()
  host = silent.host
  process.env.SLIPWAY_INSECURE_REGISTRIES = host
  t = await startTestServer({ runtime: "local", logger: makeLogger("info", (line) => void logs.push(line)) })
}, 120_000)

afterAll(async () => {
  await t?.close()
  await silent?.stop()
  if (saved === undefined) delete process.env.SLIPWAY_INSECURE_REGISTRIES
  else process.env.SLIPWAY_INSECURE_REGISTRIES = saved
}, 60_000)

/** Pids of skopeo processes talking to the silent registry. */
const pulls = () => processesMentioning(`${host}/team/`)

const eventually = async (check: () => boolean, ms = 10_000) => {
  for (const deadline = Date.now() + ms; !check() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 25))
  return check()
}

it("a client gone while its create waits for the box: the request ends (499), the box goes on provisioning until deleted", async () => {
  expect((await t.request("POST", "/v2/sandboxes/templates", { body: { name: "slow", image: `${host}/team/app:1` } })).status).toBe(201)
  const client = new AbortController()
  const waiting = fetch(`${t.url}/v2/sandboxes/boxes`, {
    method: "POST",
    headers: { "x-api-key": t.key, "content-type": "application/json" },
    body: JSON.stringify({ template_name: "slow", name: "patient", wait_for_ready: true, timeout: 120 }),
    signal: client.signal
  }).catch((error: unknown) => error)
  expect(await eventually(() => pulls().length === 1)).toBe(true)
  client.abort()
  await waiting
  // The request's fiber was interrupted (answered nobody, logged as 499), not left waiting for 120 s.
  expect(await eventually(() => logs.some((line) => line.includes('"path":"/v2/sandboxes/boxes"') && line.includes('"status":499')))).toBe(true)
  // What it committed goes on: the box exists and its pull still runs.
  const box = await t.request("GET", "/v2/sandboxes/boxes/patient")
  expect(box.body).toMatchObject({ name: "patient", status: "provisioning" })
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(pulls().length).toBe(1)
  // Deleting the box ends its bring-up, pull included.
  expect((await t.request("DELETE", "/v2/sandboxes/boxes/patient")).status).toBe(204)
  expect(await eventually(() => pulls().length === 0)).toBe(true)
})
