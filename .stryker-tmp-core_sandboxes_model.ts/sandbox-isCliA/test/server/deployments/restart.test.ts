// @ts-nocheck
import { afterEach, describe, expect, it } from "vitest"
import { type ChildServer, eventually, spawnServer, tempDatabasePath } from "../../support/server.ts"
import { containerBody, gitrepoBody } from "./helpers.ts"

const children: Array<ChildServer> = []
const databases: Array<{ remove: () => void }> = []
afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill("SIGKILL")
  for (const database of databases.splice(0)) database.remove()
})

const start = async (databasePath: string) => {
  const child = await spawnServer({ databasePath, env: { SLIPWAY_REVISION_STEP_MS: "250" } })
  children.push(child)
  return child
}

describe("restart mid-rollout", () => {
  it("a revision SIGKILLed half-way reaches DEPLOYED after the next start, and the deployment becomes READY", async () => {
    const database = tempDatabasePath("restart")
    databases.push(database)
    const first = await start(database.path)
    const container = (await first.request("POST", "/v2/deployments", { body: containerBody() })).body
    const git = (await first.request("POST", "/v2/deployments", { body: gitrepoBody() })).body
    // Wait until the gitrepo revision is under way, neither created nor finished.
    await eventually(async () => {
      const response = await first.request("GET", `/v2/deployments/${git.id}/revisions/${git.latest_revision_id}`)
      return ["AWAITING_BUILD", "BUILDING"].includes(response.body.status) ? true : undefined
    })
    first.process.kill("SIGKILL")
    await first.exited
    const second = await start(database.path)
    // Nothing moves a revision in the new process but the runtime reloading it from the database.
    for (const deployment of [git, container]) {
      const revision = await eventually(async () => {
        const response = await second.request("GET", `/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}`)
        return response.body.status === "DEPLOYED" ? response.body : undefined
      }, 15_000)
      expect(revision.status).toBe("DEPLOYED")
      const after = (await second.request("GET", `/v2/deployments/${deployment.id}`)).body
      expect(after.status).toBe("READY")
      expect(after.active_revision_id).toBe(deployment.latest_revision_id)
    }
  })

  it("a delete in progress when the server is killed finishes after the next start", async () => {
    const database = tempDatabasePath("restart-delete")
    databases.push(database)
    const first = await start(database.path)
    const created = (await first.request("POST", "/v2/deployments", { body: containerBody() })).body
    expect((await first.request("DELETE", `/v2/deployments/${created.id}`)).status).toBe(204)
    first.process.kill("SIGKILL")
    await first.exited
    const second = await start(database.path)
    await eventually(async () => ((await second.request("GET", `/v2/deployments/${created.id}`)).status === 404 ? true : undefined), 15_000)
  })
})
