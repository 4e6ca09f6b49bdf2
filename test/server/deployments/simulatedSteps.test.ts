/** The simulated driver's steps: the happy path, spent in time, and its failure hooks. */
import { describe, expect, it } from "vitest"
import type { RevisionStatus, Source, SourceRevisionConfig } from "../../../core/index.ts"
import { failureHookFor, simulatedStep as advanceRevision } from "../../../server/deployments/drivers/simulated.ts"

/** Runs the simulated driver's step until the revision stops, recording every state. */
const run = (source: Source, config: SourceRevisionConfig): Array<RevisionStatus> => {
  const seen: Array<RevisionStatus> = ["CREATING"]
  for (let step = advanceRevision("CREATING", source, config); step !== null; step = advanceRevision(seen[seen.length - 1]!, source, config)) {
    seen.push(step.status)
    if (seen.length > 20) throw new Error("the state machine does not terminate")
  }
  return seen
}

const git = (repo_ref: string, graph_config_path = "langgraph.json"): SourceRevisionConfig => ({ repo_ref, graph_config_path })
const image = (image_uri: string): SourceRevisionConfig => ({ image_uri })

describe("simulated steps", () => {
  it("advanceRevision sets a status message on arrival at DEPLOYED and returns null afterwards", () => {
    expect(advanceRevision("DEPLOYING", "gitrepo", git("main"))).toStrictEqual({ status: "DEPLOYED", message: "Deployed" })
    expect(advanceRevision("DEPLOYED", "gitrepo", git("main"))).toBeNull()
  })
})

describe("failure hooks of the local runtime", () => {
  it("fail-build in an image uri fails an external_container revision leaving QUEUED", () => {
    expect(run("external_container", image("registry/fail-build:1"))).toStrictEqual(["CREATING", "QUEUED", "BUILD_FAILED"])
  })

  it("fail-deploy in an image uri fails at DEPLOYING", () => {
    expect(run("external_container", image("registry/agent:fail-deploy"))).toStrictEqual(["CREATING", "QUEUED", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOY_FAILED"])
  })

  it("gitrepo reads the markers from graph_config_path or repo_ref", () => {
    expect(run("gitrepo", git("main", "fail-build/langgraph.json"))).toStrictEqual(["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "BUILD_FAILED"])
    expect(run("gitrepo", git("fail-deploy"))).toStrictEqual(["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOY_FAILED"])
  })

  it("fail-create fails at CREATING", () => {
    expect(run("external_container", image("fail-create"))).toStrictEqual(["CREATING", "CREATE_FAILED"])
  })

  it("a marker of the other source's field does nothing", () => {
    expect(failureHookFor("gitrepo", { repo_ref: "main", graph_config_path: "g.json", image_uri: "fail-build" })).toBeNull()
    expect(failureHookFor("external_container", { image_uri: "ok", repo_ref: "fail-deploy" })).toBeNull()
  })

  it("explains the failure in status_message", () => {
    expect(advanceRevision("BUILDING", "gitrepo", git("main", "fail-build.json"))).toStrictEqual({ status: "BUILD_FAILED", message: "Build failed (fail-build marker)" })
  })
})

