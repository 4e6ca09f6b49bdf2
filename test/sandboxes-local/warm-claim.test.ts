/**
 * Warm claims on the local runtime, over real HTTP: a pool keeps boxes started (real bubblewrap
 * boxes from the test registry's image); `POST /v2/sandboxes/boxes` with the pool's template
 * hands over a running box at once (it takes the requested name and leaves the pool, the
 * processes it started keep running), and the pool starts a real replacement.
 */
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import * as Current from "langsmith/sandbox"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startTestServer, type TestServer, executeIn } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  let mirror: ImageMirror
  let t: TestServer

  beforeAll(async () => {
    mirror = await startImageMirror()
    t = await startTestServer({ runtime: "local" })
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    await mirror?.stop()
  }, 60_000)

  type Box = { id: string; name: string; pool_name: string | null; status: string; dataplane_url: string }

  const run = (box: { dataplane_url: string }, command: string) => executeIn(box.dataplane_url, t.key, command)

  const poolBoxes = async (pool: string): Promise<Array<Box>> =>
    ((await t.request("GET", "/v2/sandboxes/boxes?limit=100")).body.sandboxes as Array<Box>).filter((box) => box.pool_name === pool)

  const untilReady = async (pool: string, count: number): Promise<Array<Box>> => {
    for (let attempt = 0; attempt < 600; attempt++) {
      const boxes = await poolBoxes(pool)
      if (boxes.length === count && boxes.every((box) => box.status === "ready")) return boxes
      const failed = boxes.find((box) => box.status === "failed")
      if (failed) throw new Error(`pool box failed: ${JSON.stringify(failed)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`pool ${pool} did not reach ${count} ready boxes: ${JSON.stringify(await poolBoxes(pool))}`)
  }

  const boxDir = (id: string) => join(dirname(t.databasePath), "runtime", "boxes", id)

  describe("warm claim (local runtime)", () => {
    it("hands over a running pool box under the requested name; what it runs keeps running; the pool starts a real replacement", async () => {
      expect((await t.request("POST", "/v2/sandboxes/templates", { body: { name: "warm", image: "python:3.12-slim", resources: { cpu: "500m", memory: "128Mi", storage: "64Mi" } } })).status).toBe(201)
      expect((await t.request("POST", "/v2/sandboxes/pools", { body: { name: "warm", template_name: "warm", replicas: 2 } })).status).toBe(201)
      const [oldest, younger] = await untilReady("warm", 2)
      // Something the box was doing while warm (a background process, a file) is there after the claim.
      await run(oldest!, "echo warmed > /home/user/state; sleep 600 >/dev/null 2>&1 &")

      const started = performance.now()
      const claimed = await t.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "warm", name: "claimed-one" } })
      const ms = performance.now() - started
      expect(claimed.status).toBe(201)
      expect(claimed.body).toMatchObject({ id: oldest!.id, name: "claimed-one", pool_name: null, status: "ready", dataplane_url: oldest!.dataplane_url })
      console.log(`warm claim over HTTP: ${ms.toFixed(1)} ms`)
      const inside = await run(claimed.body, "cat /home/user/state; ps | grep -v grep | grep -q 'sleep 600' && echo running")
      expect(inside).toMatchObject({ stdout: "warmed\nrunning\n", exit_code: 0 })

      // The pool is back to two boxes: the one left and a new one, started for real.
      const after = await untilReady("warm", 2)
      expect(after[0]!.id).toBe(younger!.id)
      expect(after[1]!.id).not.toBe(oldest!.id)
      expect((await run(after[1]!, "echo fresh; ls /home/user")).stdout).toBe("fresh\n")

      // The official client sees an ordinary sandbox.
      const client = new Current.SandboxClient({ apiKey: t.key, apiEndpoint: `${t.url}/v2/sandboxes`, maxRetries: 0 })
      const sandbox = await client.getSandbox("claimed-one")
      expect(await sandbox.run("echo $((6*7))")).toMatchObject({ stdout: "42\n", exit_code: 0 })
    })

    it("a claimed box is deleted like any other (its disk freed); deleting the pool leaves claimed boxes running", async () => {
      const second = await t.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "warm", name: "claimed-two", wait_for_ready: true, timeout: 120 } })
      expect(second.status).toBe(201)
      expect(second.body.pool_name).toBeNull()
      expect((await t.request("DELETE", "/v2/sandboxes/pools/warm")).status).toBe(204)
      expect((await run(second.body, "echo alive")).stdout).toBe("alive\n")
      expect((await t.request("DELETE", "/v2/sandboxes/boxes/claimed-two")).status).toBe(204)
      for (let attempt = 0; attempt < 200 && existsSync(boxDir(second.body.id)); attempt++) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(existsSync(boxDir(second.body.id))).toBe(false)
      expect((await run((await t.request("GET", "/v2/sandboxes/boxes/claimed-one")).body, "echo still")).stdout).toBe("still\n")
    })
  })
})
