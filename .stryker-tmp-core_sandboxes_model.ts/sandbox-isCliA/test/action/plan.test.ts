// @ts-nocheck
import { describe, expect, it } from "vitest"
import type { Inputs } from "../../action/inputs.ts"
import { externalInputs } from "./fixtures.ts"
import { type DeploymentView, plan, secretsAnnotation, secretsFingerprint } from "../../action/plan.ts"

const key = "slw_key"
const external: Inputs = externalInputs({ apiKey: key })

const gitInputs: Inputs = {
  ...external,
  source: "gitrepo",
  imageUri: undefined,
  repoUrl: "https://github.com/acme/agent",
  repoRef: "main",
  graphConfigPath: "langgraph.json"
}

const REV1 = "aaaaaaaa-0000-4000-8000-000000000001"
const REV2 = "aaaaaaaa-0000-4000-8000-000000000002"

const deployment = (overrides: Partial<DeploymentView> = {}): DeploymentView => ({
  id: "dddddddd-0000-4000-8000-000000000001",
  name: "web",
  source: "external_container",
  source_config: { resource_spec: null, listener_id: null, listener_config: null, custom_url: "http://x/d/web" },
  source_revision_config: { image_uri: "registry/app:2", repo_ref: null, graph_config_path: null },
  secrets: [],
  latest_revision_id: REV2,
  active_revision_id: REV2,
  ...overrides
})

const gitDeployment = deployment({
  source: "gitrepo",
  source_config: { repo_url: "https://github.com/acme/agent", build_on_push: false, resource_spec: null },
  source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json", image_uri: null }
})

describe("plan: create", () => {
  it("creates an external_container deployment from the inputs that are set", () => {
    expect(plan({ ...external, k8sNamespace: "prod", resourceSpec: { cpu: 1 } }, undefined)).toEqual({
      kind: "create",
      body: {
        name: "web",
        source: "external_container",
        source_config: { resource_spec: { cpu: 1 }, listener_config: { k8s_namespace: "prod" } },
        source_revision_config: { image_uri: "registry/app:2" },
        secrets: []
      }
    })
  })

  it("records the secrets fingerprint as an annotation when creating with secrets", () => {
    const secrets = [{ name: "A", value: "1" }]
    const result = plan({ ...external, secrets, resourceSpec: { annotations: { team: "a" } } }, undefined)
    expect(result).toMatchObject({
      kind: "create",
      body: {
        secrets,
        source_config: { resource_spec: { annotations: { team: "a", [secretsAnnotation]: secretsFingerprint(secrets, key) } } }
      }
    })
  })

  it("creates a gitrepo deployment", () => {
    expect(plan({ ...gitInputs, buildOnPush: true, secrets: [{ name: "A", value: "1" }] }, undefined)).toEqual({
      kind: "create",
      body: {
        name: "web",
        source: "gitrepo",
        source_config: { repo_url: "https://github.com/acme/agent", build_on_push: true },
        source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" },
        secrets: [{ name: "A", value: "1" }]
      }
    })
  })

  it("names the inputs a create is missing", () => {
    expect(plan({ ...external, source: undefined, imageUri: undefined }, undefined)).toMatchObject({ kind: "invalid", errors: [{ input: "source" }] })
    expect(plan({ ...external, imageUri: undefined }, undefined)).toMatchObject({ kind: "invalid", errors: [{ input: "image-uri" }] })
    const missing = plan({ ...gitInputs, repoRef: undefined, graphConfigPath: undefined }, undefined)
    expect(missing.kind === "invalid" && missing.errors.map((error) => error.input)).toEqual(["repo-ref", "graph-config-path"])
    expect(plan({ ...external, redeployRevisionId: REV1 }, undefined)).toMatchObject({ kind: "invalid", errors: [{ input: "redeploy-revision-id" }] })
  })
})

describe("plan: update", () => {
  it("patches only the image when it changed", () => {
    expect(plan({ ...external, imageUri: "registry/app:3" }, deployment())).toEqual({
      kind: "patch",
      body: { source_revision_config: { image_uri: "registry/app:3" } },
      createsRevision: true,
      changes: ["image-uri: registry/app:2 → registry/app:3"]
    })
  })

  it("is a no-op when nothing differs, naming the latest revision", () => {
    expect(plan(external, deployment())).toEqual({
      kind: "noop",
      reason: "deployment web already matches the inputs; no revision created",
      revisionId: REV2
    })
    expect(plan({ ...external, source: undefined, imageUri: undefined }, deployment())).toMatchObject({ kind: "noop" })
  })

  it("retries when an identical run follows a failed revision", () => {
    expect(plan(external, deployment(), { latestRevisionStatus: "DEPLOY_FAILED" })).toMatchObject({
      kind: "patch",
      body: { source_revision_config: { image_uri: "registry/app:2" } },
      createsRevision: true
    })
    expect(plan(external, deployment(), { latestRevisionStatus: "DEPLOYING" })).toMatchObject({ kind: "noop" })
  })

  it("compares resource specs ignoring nulls and key order", () => {
    const current = deployment({ source_config: { resource_spec: { memory_mb: 512, cpu: 1, labels: null } } })
    expect(plan({ ...external, resourceSpec: { cpu: 1, memory_mb: 512 } }, current)).toMatchObject({ kind: "noop" })
    expect(plan({ ...external, resourceSpec: { cpu: 2, memory_mb: 512 } }, current)).toEqual({
      kind: "patch",
      body: { source_config: { resource_spec: { cpu: 2, memory_mb: 512 } } },
      createsRevision: true,
      changes: ["resource-spec: changed"]
    })
  })

  describe("secrets (write-only)", () => {
    const secrets = [
      { name: "B", value: "2" },
      { name: "A", value: "1" }
    ]
    const applied = (spec: object = {}) =>
      deployment({
        secrets: [
          { name: "A", value: "********" } as { name: string },
          { name: "B", value: "********" } as { name: string }
        ],
        source_config: { resource_spec: { ...spec, annotations: { [secretsAnnotation]: secretsFingerprint(secrets, key) } } }
      })

    it("is a no-op when the recorded fingerprint matches, in any order", () => {
      expect(plan({ ...external, secrets: [...secrets].reverse() }, applied())).toMatchObject({ kind: "noop" })
    })

    it("applies changed values with the new fingerprint, keeping the current resource spec", () => {
      const changed = [{ name: "A", value: "1" }, { name: "B", value: "3" }]
      const result = plan({ ...external, secrets: changed }, applied({ cpu: 1 }))
      expect(result).toEqual({
        kind: "patch",
        body: {
          secrets: changed,
          source_config: { resource_spec: { cpu: 1, annotations: { [secretsAnnotation]: secretsFingerprint(changed, key) } } }
        },
        createsRevision: true,
        changes: ["secrets: 2 secret(s) differ from the last applied set"]
      })
      expect(JSON.stringify(result)).not.toContain('"3"}]}')
    })

    it("counts secrets as changed when no fingerprint was recorded, or the names differ", () => {
      expect(plan({ ...external, secrets }, deployment())).toMatchObject({ kind: "patch", body: { secrets } })
      const renamed = applied()
      expect(plan({ ...external, secrets }, { ...renamed, secrets: [{ name: "A" }] })).toMatchObject({ kind: "patch", body: { secrets } })
    })

    it("keeps the recorded fingerprint when only the resource spec changes", () => {
      expect(plan({ ...external, resourceSpec: { cpu: 4 } }, applied({ cpu: 1 }))).toEqual({
        kind: "patch",
        body: { source_config: { resource_spec: { cpu: 4, annotations: { [secretsAnnotation]: secretsFingerprint(secrets, key) } } } },
        createsRevision: true,
        changes: ["resource-spec: changed"]
      })
    })

    it("depends on the key, so the annotation reveals nothing without it", () => {
      expect(secretsFingerprint(secrets, "k1")).not.toBe(secretsFingerprint(secrets, "k2"))
      expect(secretsFingerprint(secrets, "k1")).toMatch(/^hmac-sha256:[0-9a-f]{64}$/)
    })

    it("always applies secrets to gitrepo deployments", () => {
      expect(plan({ ...gitInputs, secrets }, gitDeployment)).toMatchObject({ kind: "patch", body: { secrets }, createsRevision: true })
    })
  })

  it("patches gitrepo ref and graph path, and build-on-push in place", () => {
    expect(plan({ ...gitInputs, repoRef: "release" }, gitDeployment)).toMatchObject({
      kind: "patch",
      body: { source_revision_config: { repo_ref: "release" } },
      createsRevision: true
    })
    expect(plan({ ...gitInputs, buildOnPush: true }, gitDeployment)).toEqual({
      kind: "patch",
      body: { source_config: { build_on_push: true } },
      createsRevision: false,
      changes: ["build-on-push: false → true"]
    })
    expect(plan({ ...gitInputs, buildOnPush: false }, gitDeployment)).toMatchObject({ kind: "noop" })
  })

  it("refuses to change what cannot change after creation, naming the input", () => {
    expect(plan({ ...gitInputs, repoUrl: "https://github.com/acme/other" }, gitDeployment)).toMatchObject({
      kind: "invalid",
      errors: [{ input: "repo-url", message: expect.stringContaining("cannot be changed after creation") }]
    })
    expect(plan({ ...gitInputs }, deployment())).toMatchObject({ kind: "invalid", errors: [{ input: "source" }] })
    expect(plan({ ...external, k8sNamespace: "other" }, deployment())).toMatchObject({ kind: "invalid", errors: [{ input: "k8s-namespace" }] })
  })

  it("refuses inputs of the other source when the source was left to the deployment", () => {
    expect(plan({ ...external, source: undefined, imageUri: undefined, graphConfigPath: "g.json" }, deployment())).toMatchObject({
      kind: "invalid",
      errors: [{ input: "graph-config-path" }]
    })
  })
})

describe("plan: redeploy", () => {
  it("redeploys the given revision, listing the inputs it ignores", () => {
    expect(plan({ ...external, redeployRevisionId: REV1 }, deployment())).toEqual({ kind: "redeploy", revisionId: REV1, ignored: ["image-uri"] })
  })

  it("is a no-op when the revision is already active", () => {
    expect(plan({ ...external, redeployRevisionId: REV2 }, deployment())).toMatchObject({ kind: "noop", revisionId: REV2 })
  })
})
