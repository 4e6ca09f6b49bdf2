/**
 * The sources of `langgraph deploy` in the core's rules: internal_docker (an image pushed to the
 * server's registry) and internal_source (an uploaded tarball, built), created without a revision
 * (`awaitsFirstRevision`); the first revision needs the image or tarball, and says how to get one.
 */
import { describe, expect, it } from "vitest"
import {
  canAdvance,
  CreateDeployment,
  CreateRevision,
  Deployment,
  fullSourceConfig,
  fullSourceRevisionConfig,
  happyPath,
  PatchDeployment,
  planCreate,
  planPatch,
  planRevision,
  type StoredDeployment
} from "../../../core/deployments/index.ts"
import { Schema } from "effect"
import { decodeBody, ruleIssues, ruleValue } from "./helpers.ts"

const publicUrl = "https://slipway.example.com"
const create = (body: unknown) => planCreate(decodeBody(CreateDeployment, body), { publicUrl })
const patch = (current: StoredDeployment, body: unknown) => planPatch(current, decodeBody(PatchDeployment, body))

const image = `slipway.example.com:5000/t/d/agent@sha256:${"a".repeat(64)}`
const tarball = "uploads/t/d/0b5f9a7e-3c1d-4e2f-8a9b-7c6d5e4f3a2b.tar.gz"

/** As the CLI's create_deployment sends it. */
const cliBody = (source: string, revisionConfig: Record<string, unknown> = {}) => ({
  name: "my-agent",
  source,
  source_config: { deployment_type: "dev" },
  source_revision_config: revisionConfig,
  secrets: [{ name: "OPENAI_API_KEY", value: "sk" }]
})

const awaiting = (source: "internal_docker" | "internal_source", revisionConfig: Record<string, unknown> = {}): StoredDeployment => ({
  name: "my-agent",
  source,
  source_config: fullSourceConfig({ deployment_type: "dev", custom_url: "https://slipway.example.com/d/my-agent" }),
  source_revision_config: fullSourceRevisionConfig(revisionConfig),
  secrets: [{ name: "OPENAI_API_KEY", value: "sk" }],
  image_version: null
})

describe("planCreate: internal_docker and internal_source", () => {
  it("creates no revision, generates the custom_url, keeps the source's name", () => {
    for (const source of ["internal_docker", "internal_source"]) {
      const planned = ruleValue(create(cliBody(source)))
      expect(planned).toMatchObject({ source, createsRevision: false, source_config: { deployment_type: "dev", custom_url: "https://slipway.example.com/d/my-agent" } })
    }
    expect(ruleValue(create({ name: "x", source: "gitrepo", source_config: { repo_url: "https://github.com/a/b" }, source_revision_config: { repo_ref: "main", graph_config_path: "l.json" } })).createsRevision).toBe(true)
  })

  it("keeps langgraph_config_path as the first revision's default", () => {
    expect(ruleValue(create(cliBody("internal_source", { langgraph_config_path: "agent/langgraph.json" }))).source_revision_config.graph_config_path).toBe("agent/langgraph.json")
  })

  it("refuses the image or tarball on create (they belong to a deployment that does not exist yet), and other sources' fields", () => {
    expect(ruleIssues(create(cliBody("internal_docker", { image_uri: image })))).toMatchObject([{ loc: ["body", "source_revision_config", "image_uri"], type: "value_error" }])
    expect(ruleIssues(create(cliBody("internal_source", { source_tarball_path: tarball })))).toMatchObject([{ loc: ["body", "source_revision_config", "source_tarball_path"], type: "value_error" }])
    const issues = ruleIssues(create({ ...cliBody("internal_docker"), source_config: { listener_id: "0b6f7b1e-7d1a-4c55-9a43-3a8d4c2f1e10", install_command: "npm ci" } }))
    expect(issues.map((issue) => issue.msg)).toStrictEqual([
      "install_command applies to gitrepo and internal_source deployments only; this deployment's source is internal_docker",
      "listener_id applies to external_container deployments only; this deployment's source is internal_docker"
    ])
    expect(ruleIssues(create({ ...cliBody("internal_source"), source_config: { custom_url: "https://mine.example.com" } }))[0]!.msg).toBe("custom_url is read-only for internal_source deployments")
  })

  it("refuses install_command and build_command the CLI refuses, on every source", () => {
    const body = decodeBody(CreateDeployment, { ...cliBody("internal_source"), source_config: { install_command: "npm ci && npm run x" } })
    expect(body.source_config?.install_command).toBe("npm ci && npm run x")
    for (const bad of ["npm ci; rm -rf /", "npm ci | tee", "echo $HOME", "npm ci &", "a\nb"]) {
      expect(() => decodeBody(CreateDeployment, { ...cliBody("internal_source"), source_config: { build_command: bad } }), bad).toThrow(/build_command contains disallowed characters or patterns/)
    }
  })
})

describe("the first revision comes by PATCH", () => {
  it("internal_docker: image_uri with revision_source internal_docker creates it", () => {
    const plan = ruleValue(patch(awaiting("internal_docker"), { revision_source: "internal_docker", source_revision_config: { image_uri: image }, secrets: [{ name: "A", value: "b" }] }))
    expect(plan.revisionTriggers).toStrictEqual(["source_revision_config.image_uri", "secrets"])
    expect(plan.newRevision?.source_revision_config).toStrictEqual({ repo_ref: null, graph_config_path: null, image_uri: image, repo_commit_sha: null, source_tarball_path: null })
  })

  it("internal_source: source_tarball_path and langgraph_config_path (and the commands) create it", () => {
    const plan = ruleValue(
      patch(awaiting("internal_source"), {
        revision_source: "internal_source",
        source_revision_config: { source_tarball_path: tarball, langgraph_config_path: "agent/langgraph.json" },
        source_config: { install_command: "pnpm i", build_command: "pnpm build" }
      })
    )
    expect(plan.revisionTriggers).toStrictEqual(["source_revision_config.graph_config_path", "source_revision_config.source_tarball_path"])
    expect(plan.newRevision?.source_revision_config).toMatchObject({ source_tarball_path: tarball, graph_config_path: "agent/langgraph.json" })
    expect(plan.source_config).toMatchObject({ install_command: "pnpm i", build_command: "pnpm build" })
  })

  it("a revision without the image or tarball is refused, saying how to get one", () => {
    const noImage = ruleIssues(patch(awaiting("internal_docker"), { secrets: [{ name: "A", value: "b" }] }))
    expect(noImage).toMatchObject([{ loc: ["body", "source_revision_config", "image_uri"], type: "missing" }])
    expect(noImage[0]!.msg).toContain("POST /v2/deployments/{id}/push-token")
    const noTarball = ruleIssues(patch(awaiting("internal_source", { graph_config_path: "langgraph.json" }), { source_revision_config: { langgraph_config_path: "l.json" } }))
    expect(noTarball).toMatchObject([{ loc: ["body", "source_revision_config", "source_tarball_path"], type: "missing" }])
    expect(noTarball[0]!.msg).toContain("POST /v2/deployments/{id}/upload-url")
    const noConfig = ruleIssues(patch(awaiting("internal_source"), { source_revision_config: { source_tarball_path: tarball } }))
    expect(noConfig).toMatchObject([{ loc: ["body", "source_revision_config", "graph_config_path"], type: "missing" }])
    // Likewise through POST .../revisions.
    expect(ruleIssues(planRevision(awaiting("internal_docker"), decodeBody(CreateRevision, {})))).toMatchObject([{ loc: ["body", "source_revision_config", "image_uri"], type: "missing" }])
  })

  it("later revisions start from the latest image or tarball", () => {
    const deployed = awaiting("internal_source", { source_tarball_path: tarball, graph_config_path: "langgraph.json" })
    expect(ruleValue(patch(deployed, { secrets: [{ name: "B", value: "c" }] })).newRevision?.source_revision_config).toMatchObject({ source_tarball_path: tarball, graph_config_path: "langgraph.json" })
    // A PATCH that changes no revision field creates none, and needs nothing.
    expect(ruleValue(patch(awaiting("internal_docker"), { image_version: "1" })).newRevision).toBeNull()
  })
})

describe("revisions of the internal sources", () => {
  it("internal_docker deploys an image (no build states); internal_source builds", () => {
    expect(happyPath.internal_docker).toStrictEqual(happyPath.external_container)
    expect(happyPath.internal_source).toStrictEqual(happyPath.gitrepo)
    expect(canAdvance("QUEUED", "AWAITING_BUILD", "internal_source")).toBe(true)
    expect(canAdvance("QUEUED", "AWAITING_BUILD", "internal_docker")).toBe(false)
  })

  it("answers decode with the source as sent", () => {
    for (const source of ["internal_docker", "internal_source", "gitrepo", "external_container"]) {
      const answer = {
        name: "a",
        source,
        source_config: {},
        source_revision_config: {},
        secrets: [],
        id: "6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60",
        created_at: "2026-01-01T00:00:00.000Z",
        updated_at: "2026-01-01T00:00:00.000Z",
        status: "READY",
        latest_revision_id: null,
        active_revision_id: null
      }
      expect(Schema.decodeUnknownSync(Deployment)(answer).source).toBe(source)
    }
  })
})
