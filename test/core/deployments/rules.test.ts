import { Result } from "effect"
import { describe, expect, it } from "vitest"
import {
  checkRedeploy,
  CreateDeployment,
  CreateRevision,
  fullSourceConfig,
  fullSourceRevisionConfig,
  listenerIssues,
  normalizeRepo,
  PatchDeployment,
  planCreate,
  planPatch,
  planRevision,
  PushEvent,
  pushTriggersBuild,
  revisionForPush,
  secretMask,
  type Listener,
  type StoredDeployment
} from "../../../core/deployments/index.ts"
import { decodeBody, ruleIssues, ruleValue, where } from "./helpers.ts"

const publicUrl = "https://slipway.example.com/"
const create = (body: unknown) => planCreate(decodeBody(CreateDeployment, body), { publicUrl })
const patch = (current: StoredDeployment, body: unknown) => planPatch(current, decodeBody(PatchDeployment, body))

const gitBody = {
  name: "agent",
  source: "gitrepo",
  source_config: { repo_url: "https://github.com/acme/agent", build_on_push: true },
  source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" }
}
const imageBody = { name: "api", source: "external_container", source_revision_config: { image_uri: "registry/agent:1" } }

const listenerId = "0b6f7b1e-7d1a-4c55-9a43-3a8d4c2f1e10"
const integrationId = "6f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e"

const storedGit: StoredDeployment = {
  name: "agent",
  source: "gitrepo",
  source_config: fullSourceConfig({
    integration_id: integrationId,
    repo_url: "https://github.com/acme/agent",
    deployment_type: "dev",
    build_on_push: true,
    custom_url: "https://slipway.example.com/d/agent"
  }),
  source_revision_config: fullSourceRevisionConfig({ repo_ref: "main", graph_config_path: "langgraph.json", repo_commit_sha: "abc" }),
  secrets: [{ name: "OPENAI_API_KEY", value: "sk-real" }],
  image_version: null
}

const storedImage: StoredDeployment = {
  name: "api",
  source: "external_container",
  source_config: fullSourceConfig({ listener_id: listenerId, listener_config: { k8s_namespace: "prod" }, resource_spec: { cpu: 1, max_scale: 2 } }),
  source_revision_config: fullSourceRevisionConfig({ image_uri: "registry/agent:1" }),
  secrets: [],
  image_version: "1"
}

describe("planCreate: plain-http repositories only from the listed insecure git hosts", () => {
  const httpBody = { ...gitBody, source_config: { repo_url: "http://127.0.0.1:8418/acme/agent.git" } }

  it("refuses an http repo_url by default, at the field", () => {
    expect(ruleIssues(create(httpBody))).toStrictEqual([
      {
        loc: ["body", "source_config", "repo_url"],
        msg: "repo_url uses the transport 'http' to 127.0.0.1:8418, which this server does not allow (plain-http git hosts must be listed in SLIPWAY_INSECURE_GIT_HOSTS); use https:// or ssh://",
        type: "value_error"
      }
    ])
  })

  it("accepts it when the server lists the host, and refuses other hosts", () => {
    const withHosts = (body: unknown, insecureGitHosts: ReadonlyArray<string>) => planCreate(decodeBody(CreateDeployment, body), { publicUrl, insecureGitHosts })
    expect(ruleValue(withHosts(httpBody, ["127.0.0.1:8418"])).source_config.repo_url).toBe("http://127.0.0.1:8418/acme/agent.git")
    expect(ruleIssues(withHosts(httpBody, ["127.0.0.1:9999"])).map((issue) => issue.loc)).toStrictEqual([["body", "source_config", "repo_url"]])
    expect(ruleValue(withHosts(gitBody, [])).source_config.repo_url).toBe("https://github.com/acme/agent")
  })
})

describe("planCreate: per-source rules", () => {
  it("stores complete configs and generates the gitrepo custom_url", () => {
    const planned = ruleValue(create(gitBody))
    expect(planned.source_config.custom_url).toBe("https://slipway.example.com/d/agent")
    expect(Object.keys(planned.source_config).sort()).toStrictEqual(
      ["build_command", "build_on_push", "custom_url", "deployment_type", "install_command", "integration_id", "listener_config", "listener_id", "repo_url", "resource_spec"].sort()
    )
    expect(planned.source_revision_config).toStrictEqual({ repo_ref: "main", graph_config_path: "langgraph.json", image_uri: null, repo_commit_sha: null, source_tarball_path: null })
    expect(planned.image_version).toBeNull()
  })

  it("lets an external_container deployment set its custom_url", () => {
    expect(ruleValue(create({ ...imageBody, source_config: { custom_url: "https://agent.acme.dev" } })).source_config.custom_url).toBe("https://agent.acme.dev")
    expect(ruleValue(create(imageBody)).source_config.custom_url).toBeNull()
  })

  it("requires repo_url, repo_ref and graph_config_path for gitrepo", () => {
    expect(ruleIssues(create({ name: "agent", source: "gitrepo" }))).toStrictEqual([
      { loc: ["body", "source_config", "repo_url"], msg: "Field required", type: "missing" },
      { loc: ["body", "source_revision_config", "repo_ref"], msg: "Field required", type: "missing" },
      { loc: ["body", "source_revision_config", "graph_config_path"], msg: "Field required", type: "missing" }
    ])
  })

  it("requires image_uri for external_container, null counting as missing", () => {
    expect(where(ruleIssues(create({ name: "api", source: "external_container", source_revision_config: { image_uri: null } })))).toStrictEqual([
      { loc: ["body", "source_revision_config", "image_uri"], type: "missing" }
    ])
  })

  it("rejects every gitrepo-only field on external_container", () => {
    const issues = ruleIssues(
      create({
        ...imageBody,
        source_config: {
          integration_id: integrationId,
          repo_url: "https://github.com/a/b",
          deployment_type: "prod",
          build_on_push: false,
          install_command: "npm ci",
          build_command: "npm run build"
        },
        source_revision_config: { image_uri: "x", repo_ref: "main", graph_config_path: "g.json", repo_commit_sha: "abc" }
      })
    )
    expect(where(issues)).toStrictEqual(
      [
        ["source_config", "integration_id"],
        ["source_config", "repo_url"],
        ["source_config", "deployment_type"],
        ["source_config", "build_on_push"],
        ["source_config", "install_command"],
        ["source_config", "build_command"],
        ["source_revision_config", "repo_ref"],
        ["source_revision_config", "graph_config_path"],
        ["source_revision_config", "repo_commit_sha"]
      ].map((path) => ({ loc: ["body", ...path], type: "value_error" }))
    )
    expect(issues[0]!.msg).toBe("integration_id applies to gitrepo deployments only; this deployment's source is external_container")
  })

  it("rejects every external_container-only field on gitrepo", () => {
    const issues = ruleIssues(
      create({
        ...gitBody,
        source_config: { ...gitBody.source_config, listener_id: listenerId, listener_config: { k8s_namespace: "prod" }, resource_spec: { cpu: 1 } },
        source_revision_config: { ...gitBody.source_revision_config, image_uri: "x" }
      })
    )
    expect(where(issues)).toStrictEqual(
      [
        ["source_config", "listener_id"],
        ["source_config", "listener_config"],
        ["source_config", "resource_spec"],
        ["source_revision_config", "image_uri"]
      ].map((path) => ({ loc: ["body", ...path], type: "value_error" }))
    )
  })

  it("accepts null for the other source's fields", () => {
    expect(Result.isSuccess(create({ ...imageBody, source_config: { repo_url: null, build_on_push: null }, source_revision_config: { image_uri: "x", repo_ref: null } }))).toBe(true)
  })

  it("rejects custom_url and repo_commit_sha on gitrepo as read-only", () => {
    const issues = ruleIssues(
      create({
        ...gitBody,
        source_config: { ...gitBody.source_config, custom_url: "https://mine.example.com" },
        source_revision_config: { ...gitBody.source_revision_config, repo_commit_sha: "abc" }
      })
    )
    expect(issues).toStrictEqual([
      { loc: ["body", "source_config", "custom_url"], msg: "custom_url is read-only for gitrepo deployments", type: "value_error" },
      { loc: ["body", "source_revision_config", "repo_commit_sha"], msg: "repo_commit_sha is read-only for gitrepo deployments", type: "value_error" }
    ])
  })

  it("rejects build_on_push true with a tag repo_ref, at build_on_push", () => {
    const issues = ruleIssues(create({ ...gitBody, source_revision_config: { repo_ref: "refs/tags/v1.0", graph_config_path: "g.json" } }))
    expect(issues).toStrictEqual([
      { loc: ["body", "source_config", "build_on_push"], msg: "build_on_push must be false when repo_ref is a tag (refs/tags/v1.0)", type: "value_error" }
    ])
  })

  it("accepts a tag with build_on_push false or unset, and a branch named like a tag", () => {
    const tag = { repo_ref: "refs/tags/v1.0", graph_config_path: "g.json" }
    expect(Result.isSuccess(create({ ...gitBody, source_config: { ...gitBody.source_config, build_on_push: false }, source_revision_config: tag }))).toBe(true)
    expect(Result.isSuccess(create({ ...gitBody, source_config: { repo_url: "https://github.com/a/b" }, source_revision_config: tag }))).toBe(true)
    expect(Result.isSuccess(create({ ...gitBody, source_revision_config: { repo_ref: "tags/v1", graph_config_path: "g.json" } }))).toBe(true)
  })

  it("requires listener_id with listener_config", () => {
    expect(where(ruleIssues(create({ ...imageBody, source_config: { listener_config: { k8s_namespace: "prod" } } })))).toStrictEqual([
      { loc: ["body", "source_config", "listener_config"], type: "value_error" }
    ])
  })

  it("refuses the secret mask as the value of a new secret", () => {
    expect(where(ruleIssues(create({ ...imageBody, secrets: [{ name: "A", value: "a" }, { name: "B", value: secretMask }] })))).toStrictEqual([
      { loc: ["body", "secrets", 1, "value"], type: "value_error" }
    ])
  })

  it("reports problems of several rules together", () => {
    const issues = ruleIssues(create({ name: "api", source: "external_container", source_config: { repo_url: "https://github.com/a/b" } }))
    expect(where(issues)).toStrictEqual([
      { loc: ["body", "source_config", "repo_url"], type: "value_error" },
      { loc: ["body", "source_revision_config", "image_uri"], type: "missing" }
    ])
  })
})

describe("listenerIssues", () => {
  const listener: Listener = {
    id: listenerId,
    compute_type: "k8s",
    compute_config: { k8s_namespaces: ["prod", "staging"] },
    created_at: "2025-01-01T00:00:00.000Z",
    updated_at: "2025-01-01T00:00:00.000Z"
  }

  it("accepts a served namespace, or no namespace", () => {
    expect(listenerIssues({ listener_id: listenerId, listener_config: { k8s_namespace: "staging" } }, listener)).toStrictEqual([])
    expect(listenerIssues({ listener_id: listenerId }, listener)).toStrictEqual([])
    expect(listenerIssues({}, undefined)).toStrictEqual([])
  })

  it("reports an unknown listener at listener_id and an unserved namespace at k8s_namespace", () => {
    expect(where(listenerIssues({ listener_id: listenerId }, undefined))).toStrictEqual([{ loc: ["body", "source_config", "listener_id"], type: "value_error" }])
    expect(listenerIssues({ listener_id: listenerId, listener_config: { k8s_namespace: "dev" } }, listener).map(({ loc, msg, type }) => ({ loc, msg, type }))).toStrictEqual([
      {
        loc: ["body", "source_config", "listener_config", "k8s_namespace"],
        msg: `Namespace 'dev' is not served by listener ${listenerId} (namespaces: prod, staging)`,
        type: "value_error"
      }
    ])
  })
})

describe("planPatch", () => {
  it("changes nothing and creates no revision for an empty body", () => {
    const plan = ruleValue(patch(storedGit, {}))
    expect(plan.newRevision).toBeNull()
    expect(plan.revisionTriggers).toStrictEqual([])
    expect(plan.source_config).toStrictEqual(storedGit.source_config)
  })

  it("accepts immutable fields repeated with their current values (idempotent apply)", () => {
    const plan = ruleValue(
      patch(storedGit, {
        name: "agent",
        source: "gitrepo",
        source_config: { integration_id: integrationId, repo_url: "https://github.com/acme/agent", deployment_type: "dev", custom_url: "https://slipway.example.com/d/agent" },
        source_revision_config: { repo_commit_sha: "abc" }
      })
    )
    expect(plan.newRevision).toBeNull()
  })

  it("rejects a change of any immutable field with frozen_field at the field", () => {
    const issues = ruleIssues(
      patch(storedGit, {
        name: "other",
        source: "external_container",
        source_config: { integration_id: "1f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e", repo_url: "https://github.com/acme/fork", deployment_type: "prod" }
      })
    )
    expect(where(issues)).toStrictEqual([
      { loc: ["body", "name"], type: "frozen_field" },
      { loc: ["body", "source"], type: "frozen_field" },
      { loc: ["body", "source_config", "integration_id"], type: "frozen_field" },
      { loc: ["body", "source_config", "repo_url"], type: "frozen_field" },
      { loc: ["body", "source_config", "deployment_type"], type: "frozen_field" }
    ])
    expect(issues[0]!.msg).toBe("name cannot be changed after creation (it is 'agent')")
  })

  it("rejects changing listener_id or listener_config, and accepts them unchanged", () => {
    expect(where(ruleIssues(patch(storedImage, { source_config: { listener_id: integrationId, listener_config: { k8s_namespace: "staging" } } })))).toStrictEqual([
      { loc: ["body", "source_config", "listener_id"], type: "frozen_field" },
      { loc: ["body", "source_config", "listener_config"], type: "frozen_field" }
    ])
    expect(Result.isSuccess(patch(storedImage, { source_config: { listener_id: listenerId, listener_config: { k8s_namespace: "prod" } } }))).toBe(true)
  })

  it("applies the per-source rules to the patch, reporting a wrong-source field once", () => {
    expect(where(ruleIssues(patch(storedGit, { source_config: { resource_spec: { cpu: 1 }, listener_id: listenerId } })))).toStrictEqual([
      { loc: ["body", "source_config", "listener_id"], type: "value_error" },
      { loc: ["body", "source_config", "resource_spec"], type: "value_error" }
    ])
    expect(where(ruleIssues(patch(storedImage, { source_config: { repo_url: "https://github.com/a/b" }, source_revision_config: { repo_ref: "main" } })))).toStrictEqual([
      { loc: ["body", "source_config", "repo_url"], type: "value_error" },
      { loc: ["body", "source_revision_config", "repo_ref"], type: "value_error" }
    ])
  })

  it("rejects a changed custom_url or repo_commit_sha on gitrepo; external_container may change its custom_url", () => {
    expect(where(ruleIssues(patch(storedGit, { source_config: { custom_url: "https://x.example.com" }, source_revision_config: { repo_commit_sha: "def" } })))).toStrictEqual([
      { loc: ["body", "source_config", "custom_url"], type: "value_error" },
      { loc: ["body", "source_revision_config", "repo_commit_sha"], type: "value_error" }
    ])
    const plan = ruleValue(patch(storedImage, { source_config: { custom_url: "https://agent.acme.dev" } }))
    expect(plan.source_config.custom_url).toBe("https://agent.acme.dev")
    expect(plan.newRevision).toBeNull()
  })

  it("updates in-place fields without a revision", () => {
    const plan = ruleValue(patch(storedGit, { source_config: { build_on_push: false, install_command: "pnpm i" }, image_version: "0.3" }))
    expect(plan.newRevision).toBeNull()
    expect(plan.source_config.build_on_push).toBe(false)
    expect(plan.source_config.install_command).toBe("pnpm i")
    expect(plan.source_config.repo_url).toBe("https://github.com/acme/agent")
    expect(plan.image_version).toBe("0.3")
  })

  it.each([
    [{ source_revision_config: { repo_ref: "dev" } }, "source_revision_config.repo_ref"],
    [{ source_revision_config: { graph_config_path: "other.json" } }, "source_revision_config.graph_config_path"],
    [{ secrets: [] }, "secrets"]
  ])("creates one revision for %j on gitrepo", (body, trigger) => {
    const plan = ruleValue(patch(storedGit, body))
    expect(plan.revisionTriggers).toStrictEqual([trigger])
    expect(plan.newRevision).not.toBeNull()
  })

  it.each([
    [{ source_revision_config: { image_uri: "registry/agent:2" } }, "source_revision_config.image_uri"],
    [{ source_config: { resource_spec: { cpu: 2 } } }, "source_config.resource_spec"]
  ])("creates one revision for %j on external_container", (body, trigger) => {
    expect(ruleValue(patch(storedImage, body)).revisionTriggers).toStrictEqual([trigger])
  })

  it("creates a single revision however many triggers are sent", () => {
    const plan = ruleValue(patch(storedGit, { source_revision_config: { repo_ref: "dev", graph_config_path: "g2.json" }, secrets: [{ name: "A", value: "1" }] }))
    expect(plan.revisionTriggers).toHaveLength(3)
    expect(plan.newRevision).toStrictEqual({
      source_revision_config: { repo_ref: "dev", graph_config_path: "g2.json", image_uri: null, repo_commit_sha: null, source_tarball_path: null },
      secrets: [{ name: "A", value: "1" }]
    })
  })

  it("creates no revision for null trigger fields", () => {
    const plan = ruleValue(patch(storedGit, { source_revision_config: { repo_ref: null, graph_config_path: null }, secrets: null, source_config: { resource_spec: null } }))
    expect(plan.newRevision).toBeNull()
  })

  it("starts the new revision from the latest revision's values, without its commit", () => {
    const plan = ruleValue(patch(storedGit, { source_revision_config: { graph_config_path: "other.json" } }))
    expect(plan.newRevision?.source_revision_config).toStrictEqual({ repo_ref: "main", graph_config_path: "other.json", image_uri: null, repo_commit_sha: null, source_tarball_path: null })
    expect(plan.newRevision?.secrets).toStrictEqual(storedGit.secrets)
  })

  it("overwrites the resource_spec whole", () => {
    const plan = ruleValue(patch(storedImage, { source_config: { resource_spec: { memory_mb: 512 } } }))
    expect(plan.source_config.resource_spec).toStrictEqual({ memory_mb: 512 })
  })

  it("replaces secrets, keeping the stored value of a secret sent masked", () => {
    const plan = ruleValue(patch(storedGit, { secrets: [{ name: "OPENAI_API_KEY", value: secretMask }, { name: "NEW", value: "n" }] }))
    expect(plan.newRevision?.secrets).toStrictEqual([{ name: "OPENAI_API_KEY", value: "sk-real" }, { name: "NEW", value: "n" }])
    expect(where(ruleIssues(patch(storedGit, { secrets: [{ name: "OTHER", value: secretMask }] })))).toStrictEqual([
      { loc: ["body", "secrets", 0, "value"], type: "value_error" }
    ])
  })

  it("checks the tag rule on the merged result", () => {
    // A tag ref while build_on_push is stored as true: reported at the repo_ref that was sent.
    expect(ruleIssues(patch(storedGit, { source_revision_config: { repo_ref: "refs/tags/v2" } }))).toStrictEqual([
      { loc: ["body", "source_revision_config", "repo_ref"], msg: "build_on_push must be false when repo_ref is a tag (refs/tags/v2)", type: "value_error" }
    ])
    const onTag: StoredDeployment = {
      ...storedGit,
      source_config: { ...storedGit.source_config, build_on_push: false },
      source_revision_config: { ...storedGit.source_revision_config, repo_ref: "refs/tags/v1" }
    }
    // Enabling build_on_push on a deployment that follows a tag: reported at build_on_push.
    expect(where(ruleIssues(patch(onTag, { source_config: { build_on_push: true } })))).toStrictEqual([{ loc: ["body", "source_config", "build_on_push"], type: "value_error" }])
    // Both together are fine when the ref moves to a branch in the same request.
    expect(Result.isSuccess(patch(onTag, { source_config: { build_on_push: true }, source_revision_config: { repo_ref: "main" } }))).toBe(true)
    // And switching to a tag while turning build_on_push off is fine too.
    expect(Result.isSuccess(patch(storedGit, { source_config: { build_on_push: false }, source_revision_config: { repo_ref: "refs/tags/v2" } }))).toBe(true)
  })
})

describe("planRevision (POST .../revisions)", () => {
  it("always creates a revision, from the latest values plus the body's", () => {
    expect(ruleValue(planRevision(storedImage, decodeBody(CreateRevision, {})))).toStrictEqual({
      source_revision_config: { image_uri: "registry/agent:1", repo_ref: null, graph_config_path: null, repo_commit_sha: null, source_tarball_path: null },
      secrets: []
    })
    expect(ruleValue(planRevision(storedImage, decodeBody(CreateRevision, { source_revision_config: { image_uri: "registry/agent:2" } }))).source_revision_config.image_uri).toBe(
      "registry/agent:2"
    )
  })

  it("applies the source, read-only, tag and secret rules", () => {
    const issues = ruleIssues(
      planRevision(
        storedGit,
        decodeBody(CreateRevision, { source_revision_config: { image_uri: "x", repo_ref: "refs/tags/v1", repo_commit_sha: "zzz" }, secrets: [{ name: "X", value: secretMask }] })
      )
    )
    expect(where(issues)).toStrictEqual([
      { loc: ["body", "source_revision_config", "image_uri"], type: "value_error" },
      { loc: ["body", "source_revision_config", "repo_commit_sha"], type: "value_error" },
      { loc: ["body", "source_revision_config", "repo_ref"], type: "value_error" },
      { loc: ["body", "secrets", 0, "value"], type: "value_error" }
    ])
  })
})

describe("planRevision pins a gitrepo commit", () => {
  it("stores a hex repo_commit_sha (lowercased) on the new revision, and refuses anything else", () => {
    const planned = ruleValue(planRevision(storedGit, decodeBody(CreateRevision, { source_revision_config: { repo_commit_sha: "ABCDEF0123456789abcdef0123456789abcdef01" } })))
    expect(planned.source_revision_config).toMatchObject({ repo_ref: "main", repo_commit_sha: "abcdef0123456789abcdef0123456789abcdef01" })
    expect(ruleValue(planRevision(storedGit, decodeBody(CreateRevision, {}))).source_revision_config.repo_commit_sha).toBeNull()
    for (const bad of ["zzz", "abc", "--upload-pack=x", "a".repeat(65)]) {
      expect(where(ruleIssues(planRevision(storedGit, decodeBody(CreateRevision, { source_revision_config: { repo_commit_sha: bad } }))))).toStrictEqual([
        { loc: ["body", "source_revision_config", "repo_commit_sha"], type: "value_error" }
      ])
    }
  })
})

describe("push webhook", () => {
  const push = (ref: string, overrides: Record<string, unknown> = {}) =>
    decodeBody(PushEvent, {
      ref,
      after: "0123456789abcdef0123456789abcdef01234567",
      repository: { clone_url: "https://github.com/Acme/Agent.git", html_url: "https://github.com/Acme/Agent", full_name: "Acme/Agent" },
      ...overrides
    })

  it("normalizes the spellings of a repository", () => {
    for (const url of ["https://github.com/acme/agent", "https://github.com/acme/agent.git", "git@github.com:acme/agent.git", "HTTPS://www.GitHub.com/acme/agent/", "ssh://git@github.com/acme/agent"]) {
      expect(normalizeRepo(url)).toBe("github.com/acme/agent")
    }
  })

  it("builds a gitrepo deployment with build_on_push on a push to its branch, pinned to the pushed commit", () => {
    expect(pushTriggersBuild(storedGit, push("refs/heads/main"))).toBe(true)
    expect(revisionForPush(storedGit, push("refs/heads/main"))).toStrictEqual({
      source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json", image_uri: null, repo_commit_sha: "0123456789abcdef0123456789abcdef01234567", source_tarball_path: null },
      secrets: storedGit.secrets
    })
  })

  it("ignores other branches, other repositories, deletions, build_on_push off and external containers", () => {
    expect(pushTriggersBuild(storedGit, push("refs/heads/dev"))).toBe(false)
    expect(pushTriggersBuild(storedGit, push("refs/tags/main"))).toBe(false)
    expect(pushTriggersBuild(storedGit, push("refs/heads/main", { repository: { clone_url: "https://github.com/acme/other.git", html_url: "https://github.com/acme/other", full_name: "acme/other" } }))).toBe(
      false
    )
    expect(pushTriggersBuild(storedGit, push("refs/heads/main", { after: "0000000000000000000000000000000000000000", deleted: true }))).toBe(false)
    expect(pushTriggersBuild({ ...storedGit, source_config: { ...storedGit.source_config, build_on_push: false } }, push("refs/heads/main"))).toBe(false)
    expect(pushTriggersBuild(storedImage, push("refs/heads/main"))).toBe(false)
    expect(revisionForPush(storedGit, push("refs/heads/dev"))).toBeNull()
  })
})

describe("checkRedeploy", () => {
  const deployment = { id: "d1", deleting: false }
  const revision = (status: "DEPLOYED" | "INTERRUPTED" | "BUILD_FAILED" | "QUEUED", deployed_at: string | null, deployment_id = "d1") => ({ id: "r1", deployment_id, status, deployed_at })

  it("allows a revision of this deployment that reached DEPLOYED at some point", () => {
    expect(Result.isSuccess(checkRedeploy({ deployment, revisionId: "r1", revision: revision("DEPLOYED", "2025-01-01T00:00:00.000Z") }))).toBe(true)
    expect(Result.isSuccess(checkRedeploy({ deployment, revisionId: "r1", revision: revision("INTERRUPTED", "2025-01-01T00:00:00.000Z") }))).toBe(true)
  })

  const refused = (request: Parameters<typeof checkRedeploy>[0]) => {
    const result = checkRedeploy(request)
    if (Result.isSuccess(result)) throw new Error("expected a refusal")
    expect(result.failure._tag).toBe("BadRequest")
    return result.failure.message
  }

  it("refuses a revision that never deployed, naming its status", () => {
    expect(refused({ deployment, revisionId: "r1", revision: revision("BUILD_FAILED", null) })).toBe("Revision r1 cannot be redeployed: it has never been deployed (status BUILD_FAILED)")
    expect(refused({ deployment, revisionId: "r1", revision: revision("QUEUED", null) })).toContain("never been deployed")
  })

  it("refuses an unknown revision or one of another deployment", () => {
    expect(refused({ deployment, revisionId: "r9", revision: undefined })).toBe("Revision r9 not found in deployment d1")
    expect(refused({ deployment, revisionId: "r1", revision: revision("DEPLOYED", "2025-01-01T00:00:00.000Z", "d2") })).toBe("Revision r1 not found in deployment d1")
  })

  it("refuses while the deployment is being deleted", () => {
    expect(refused({ deployment: { id: "d1", deleting: true }, revisionId: "r1", revision: revision("DEPLOYED", "x") })).toBe("Deployment d1 is being deleted")
  })
})
