import { describe, expect, it } from "vitest"
import {
  activate,
  canAdvance,
  databaseReadyOf,
  deploymentStatus,
  everDeployed,
  happyPath,
  isFailed,
  isInProgress,
  isPending,
  isTerminal,
  nextStatus,
  revisionStatuses,
  supersededStatus,
  type RevisionStatus,
  type Source,
  type SourceRevisionConfig
} from "../../../core/deployments/index.ts"

/** Walks the happy path from CREATING with `nextStatus`, recording every state. */
const run = (source: Source, _config: SourceRevisionConfig): Array<RevisionStatus> => {
  const seen: Array<RevisionStatus> = ["CREATING"]
  for (let next = nextStatus("CREATING", source); next !== null; next = nextStatus(seen[seen.length - 1]!, source)) {
    seen.push(next)
    if (seen.length > 20) throw new Error("the state machine does not terminate")
  }
  return seen
}

const git = (repo_ref: string, graph_config_path = "langgraph.json"): SourceRevisionConfig => ({ repo_ref, graph_config_path })
const image = (image_uri: string): SourceRevisionConfig => ({ image_uri })

describe("revision status set", () => {
  it("is the real service's full set (design.md section 5)", () => {
    expect([...revisionStatuses].sort()).toStrictEqual(
      [
        "CREATING",
        "QUEUED",
        "AWAITING_BUILD",
        "BUILDING",
        "AWAITING_DEPLOY",
        "DEPLOYING",
        "DEPLOYED",
        "CREATE_FAILED",
        "BUILD_FAILED",
        "DEPLOY_FAILED",
        "SKIPPED",
        "INTERRUPTED",
        "UNKNOWN"
      ].sort()
    )
  })

  it("classifies every status as exactly one of pending, in progress or terminal", () => {
    for (const status of revisionStatuses) {
      expect([isPending(status), isInProgress(status), isTerminal(status)].filter(Boolean)).toHaveLength(1)
    }
    expect(revisionStatuses.filter(isPending)).toStrictEqual(["CREATING", "QUEUED"])
    expect(revisionStatuses.filter(isInProgress)).toStrictEqual(["AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING"])
    expect(revisionStatuses.filter(isFailed)).toStrictEqual(["CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"])
  })
})

describe("happy path", () => {
  it("gitrepo goes through the build states", () => {
    expect(run("gitrepo", git("main"))).toStrictEqual(["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"])
  })

  it("external_container skips AWAITING_BUILD and BUILDING", () => {
    expect(run("external_container", image("registry/agent:1"))).toStrictEqual(["CREATING", "QUEUED", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"])
  })

  it("nextStatus follows the path and stops at the end or off it", () => {
    expect(nextStatus("QUEUED", "gitrepo")).toBe("AWAITING_BUILD")
    expect(nextStatus("QUEUED", "external_container")).toBe("AWAITING_DEPLOY")
    expect(nextStatus("DEPLOYED", "gitrepo")).toBeNull()
    expect(nextStatus("BUILDING", "external_container")).toBeNull()
    expect(nextStatus("BUILD_FAILED", "gitrepo")).toBeNull()
  })

  it("every non-terminal state on a path has a next state and every path ends in DEPLOYED", () => {
    for (const source of ["gitrepo", "external_container"] as const) {
      const path = happyPath[source]
      expect(path[path.length - 1]).toBe("DEPLOYED")
      for (const status of path.slice(0, -1)) expect(isTerminal(status)).toBe(false)
    }
  })

  it("canAdvance allows the next happy-path state or a failure, from a state still in progress", () => {
    expect(canAdvance("CREATING", "QUEUED", "gitrepo")).toBe(true)
    expect(canAdvance("QUEUED", "AWAITING_DEPLOY", "external_container")).toBe(true)
    expect(canAdvance("QUEUED", "AWAITING_DEPLOY", "gitrepo")).toBe(false)
    expect(canAdvance("DEPLOYING", "DEPLOY_FAILED", "gitrepo")).toBe(true)
    expect(canAdvance("CREATING", "DEPLOYED", "external_container")).toBe(false)
    expect(canAdvance("DEPLOYED", "DEPLOY_FAILED", "external_container")).toBe(false)
    expect(canAdvance("SKIPPED", "QUEUED", "external_container")).toBe(false)
  })
})

describe("superseding", () => {
  it.each([
    ["CREATING", "SKIPPED"],
    ["QUEUED", "SKIPPED"],
    ["AWAITING_BUILD", "INTERRUPTED"],
    ["BUILDING", "INTERRUPTED"],
    ["AWAITING_DEPLOY", "INTERRUPTED"],
    ["DEPLOYING", "INTERRUPTED"],
    ["DEPLOYED", "DEPLOYED"],
    ["BUILD_FAILED", "BUILD_FAILED"],
    ["SKIPPED", "SKIPPED"]
  ] as Array<[RevisionStatus, RevisionStatus]>)("%s becomes %s", (status, expected) => {
    expect(supersededStatus(status)).toBe(expected)
  })
})

describe("deployment status", () => {
  const revision = "6f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e"

  it("is AWAITING_DATABASE until a revision deploys, then READY", () => {
    expect(deploymentStatus({ activeRevisionId: null, maxScale: 3, deleting: false })).toBe("AWAITING_DATABASE")
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: 3, deleting: false })).toBe("READY")
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: null, deleting: false })).toBe("READY")
  })

  it("is UNUSED when a deployed deployment is scaled to zero", () => {
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: 0, deleting: false })).toBe("UNUSED")
  })

  it("follows the database when a runtime reports it: AWAITING_DATABASE while provisioning; READY once provisioned and a revision deployed", () => {
    expect(deploymentStatus({ activeRevisionId: null, maxScale: 3, deleting: false, databaseReady: false })).toBe("AWAITING_DATABASE")
    // A database is not a deployment that serves: with no revision deployed (its only one failed) it stays AWAITING_DATABASE (design.md §5).
    expect(deploymentStatus({ activeRevisionId: null, maxScale: 3, deleting: false, databaseReady: true })).toBe("AWAITING_DATABASE")
    expect(deploymentStatus({ activeRevisionId: null, maxScale: 0, deleting: false, databaseReady: true })).toBe("AWAITING_DATABASE")
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: 3, deleting: false, databaseReady: true })).toBe("READY")
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: 0, deleting: false, databaseReady: true })).toBe("UNUSED")
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: 3, deleting: false, databaseReady: false })).toBe("AWAITING_DATABASE")
    expect(deploymentStatus({ activeRevisionId: null, maxScale: 3, deleting: true, databaseReady: true })).toBe("AWAITING_DELETE")
  })

  it("reads a stored deployment's database readiness from its status or its active revision", () => {
    expect(databaseReadyOf({ status: "AWAITING_DATABASE", active_revision_id: null })).toBe(false)
    expect(databaseReadyOf({ status: "READY", active_revision_id: null })).toBe(true)
    expect(databaseReadyOf({ status: "UNUSED", active_revision_id: null })).toBe(true)
    expect(databaseReadyOf({ status: "AWAITING_DATABASE", active_revision_id: revision })).toBe(true)
  })

  it("is AWAITING_DELETE while deleting, whatever else holds", () => {
    expect(deploymentStatus({ activeRevisionId: revision, maxScale: 0, deleting: true })).toBe("AWAITING_DELETE")
    expect(deploymentStatus({ activeRevisionId: null, maxScale: 1, deleting: true })).toBe("AWAITING_DELETE")
  })
})

describe("redeploy effect", () => {
  it("a revision ever deployed can be activated; activating makes it the active revision", () => {
    expect(everDeployed({ status: "DEPLOYED", deployed_at: null })).toBe(true)
    expect(everDeployed({ status: "INTERRUPTED", deployed_at: "2025-01-01T00:00:00.000Z" })).toBe(true)
    expect(everDeployed({ status: "DEPLOY_FAILED", deployed_at: null })).toBe(false)
    expect(activate("r1")).toStrictEqual({ active_revision_id: "r1" })
  })
})
