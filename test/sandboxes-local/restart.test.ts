/** A server restart brings every box back to the state the database says, with its files. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startTestServer, tempDatabasePath, executeIn } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  let mirror: ImageMirror
  const database = tempDatabasePath("restart")

  beforeAll(async () => {
    mirror = await startImageMirror()
  }, 180_000)

  afterAll(async () => {
    await mirror?.stop()
    database.remove()
  })

  const execute = (url: string, key: string, command: string) => executeIn(url, key, command, 30)

  it("ready boxes are running again after a restart, stopped ones stay stopped, files are kept", async () => {
    const first = await startTestServer({ runtime: "local", databasePath: database.path })
    let ready: { dataplane_url: string }
    try {
      await first.request("POST", "/v2/sandboxes/templates", { body: { name: "py", image: "python:3.12-slim", resources: { cpu: "250m", memory: "128Mi" } } })
      ready = (await first.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "py", name: "survivor", wait_for_ready: true, timeout: 120 } })).body
      await first.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "py", name: "sleeper", wait_for_ready: true, timeout: 120 } })
      expect((await execute(ready.dataplane_url, first.key, "echo before > /home/user/state")).exit_code).toBe(0)
      expect((await first.request("POST", "/v2/sandboxes/boxes/sleeper/stop")).body.status).toBe("stopped")
    } finally {
      await first.close()
    }

    const second = await startTestServer({ runtime: "local", databasePath: database.path })
    try {
      const box = (await second.request("GET", "/v2/sandboxes/boxes/survivor")).body
      let status = box.status
      for (let attempt = 0; attempt < 100 && status !== "ready"; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        status = (await second.request("GET", "/v2/sandboxes/boxes/survivor/status")).body.status
      }
      expect(status).toBe("ready")
      expect((await execute(box.dataplane_url, second.key, "cat /home/user/state")).stdout).toBe("before\n")
      expect((await second.request("GET", "/v2/sandboxes/boxes/sleeper/status")).body.status).toBe("stopped")
    } finally {
      await second.close()
    }
  })
})
