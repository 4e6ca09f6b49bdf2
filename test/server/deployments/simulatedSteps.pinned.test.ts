/** Failure hooks and steps of the revision state machine, each on its own (found by mutation testing). */
import { describe, expect, it } from "vitest"
import { failureHookFor, simulatedStep as advanceRevision } from "../../../server/deployments/drivers/simulated.ts"

const image = (image_uri: string | null) => ({ image_uri, repo_ref: null, graph_config_path: null, repo_commit_sha: null })
const git = (repo_ref: string | null, graph_config_path: string | null) => ({ repo_ref, graph_config_path, image_uri: null, repo_commit_sha: null })

describe("failure hooks", () => {
  it("each hook's message", () => {
    expect(advanceRevision("CREATING", "external_container", image("img:fail-create"))).toStrictEqual({
      status: "CREATE_FAILED",
      message: "Revision could not be created (fail-create marker)"
    })
    expect(advanceRevision("QUEUED", "external_container", image("img:fail-build"))).toStrictEqual({
      status: "BUILD_FAILED",
      message: "Image could not be prepared (fail-build marker)"
    })
    expect(advanceRevision("BUILDING", "gitrepo", git("fail-build", "g.json"))).toStrictEqual({ status: "BUILD_FAILED", message: "Build failed (fail-build marker)" })
    expect(advanceRevision("DEPLOYING", "external_container", image("img:fail-deploy"))).toStrictEqual({
      status: "DEPLOY_FAILED",
      message: "Deploy failed (fail-deploy marker)"
    })
  })

  it("a marker in either gitrepo field, with the other one null", () => {
    expect(failureHookFor("gitrepo", git("fail-deploy", null))?.becomes).toBe("DEPLOY_FAILED")
    expect(failureHookFor("gitrepo", git(null, "fail-create/langgraph.json"))?.becomes).toBe("CREATE_FAILED")
    expect(failureHookFor("gitrepo", git(null, null))).toBeNull()
    expect(failureHookFor("external_container", image(null))).toBeNull()
  })

  it("steps before DEPLOYED carry no status message", () => {
    expect(advanceRevision("CREATING", "gitrepo", git("main", "g.json"))).toStrictEqual({ status: "QUEUED", message: null })
    expect(advanceRevision("QUEUED", "external_container", image("ok:1"))).toStrictEqual({ status: "AWAITING_DEPLOY", message: null })
  })
})
