/**
 * Behaviours that mutation testing (npm run mutate) found unpinned: each test here fails when one
 * specific rule is broken, on its own, not only together with others.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import {
  CreateDeployment,
  CreateRevision,
  fullSourceConfig,
  gitrepoCustomUrl,
  listenerConfigIssues,
  listenerIssues,
  normalizeRepo,
  planCreate,
  resolveSecrets,
  secretMask,
  fullSourceRevisionConfig,
  immutableIssues,
  PatchDeployment,
  planPatch,
  planRevision,
  PushEvent,
  pushTriggersBuild,
  revisionForPush,
  sameValue,
  type StoredDeployment
} from "../../../core/deployments/index.ts"
import { decodeBody, ruleIssues, ruleValue, where } from "./helpers.ts"

const patch = (current: StoredDeployment, body: unknown) => planPatch(current, decodeBody(PatchDeployment, body))

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
    custom_url: "https://slipway.example.com/d/agent",
    install_command: "npm ci"
  }),
  source_revision_config: fullSourceRevisionConfig({ repo_ref: "main", graph_config_path: "langgraph.json", repo_commit_sha: "abc" }),
  secrets: [
    { name: "OPENAI_API_KEY", value: "sk-real" },
    { name: "DATABASE_URL", value: "postgres://db" }
  ],
  image_version: "0.1"
}

const storedImage: StoredDeployment = {
  name: "api",
  source: "external_container",
  source_config: fullSourceConfig({ listener_id: listenerId, listener_config: { k8s_namespace: "prod" }, resource_spec: { cpu: 1, max_scale: 2 } }),
  source_revision_config: fullSourceRevisionConfig({ image_uri: "registry/agent:1" }),
  secrets: [{ name: "TOKEN", value: "t0k3n" }],
  image_version: "1"
}

describe("a null PATCH field leaves the stored value as it is", () => {
  it("in source_config (in-place fields)", () => {
    const plan = ruleValue(patch(storedGit, { source_config: { build_on_push: null, install_command: null, repo_url: null } }))
    expect(plan.source_config).toStrictEqual(storedGit.source_config)
    expect(plan.newRevision).toBeNull()
  })

  it("in source_revision_config, next to a field that creates a revision", () => {
    const plan = ruleValue(patch(storedGit, { source_revision_config: { repo_ref: "dev", graph_config_path: null } }))
    expect(plan.newRevision?.source_revision_config).toStrictEqual({ repo_ref: "dev", graph_config_path: "langgraph.json", image_uri: null, repo_commit_sha: null, source_tarball_path: null })
  })

  it("for image_version", () => {
    expect(ruleValue(patch(storedGit, { image_version: null })).image_version).toBe("0.1")
    expect(ruleValue(patch({ ...storedGit, image_version: undefined }, {})).image_version).toBeNull()
  })

  it("an immutable field sent as null is not a change", () => {
    expect(immutableIssues(storedGit, decodeBody(PatchDeployment, { name: null, source: null, source_config: { integration_id: null, repo_url: null } }))).toStrictEqual([])
  })
})

describe("a new revision sent without secrets keeps the stored secrets", () => {
  it("PATCH with another trigger and no secrets key", () => {
    const plan = ruleValue(patch(storedGit, { source_revision_config: { repo_ref: "dev" } }))
    expect(plan.newRevision?.secrets).toStrictEqual(storedGit.secrets)
  })

  it("PATCH with secrets: null", () => {
    const plan = ruleValue(patch(storedImage, { secrets: null, source_revision_config: { image_uri: "registry/agent:2" } }))
    expect(plan.newRevision?.secrets).toStrictEqual(storedImage.secrets)
  })

  it("POST .../revisions with no secrets, or null secrets", () => {
    expect(ruleValue(planRevision(storedImage, decodeBody(CreateRevision, {}))).secrets).toStrictEqual(storedImage.secrets)
    expect(ruleValue(planRevision(storedImage, decodeBody(CreateRevision, { secrets: null }))).secrets).toStrictEqual(storedImage.secrets)
  })

  it("an empty list does remove them (it was sent)", () => {
    expect(ruleValue(patch(storedImage, { secrets: [] })).newRevision?.secrets).toStrictEqual([])
    expect(ruleValue(planRevision(storedImage, decodeBody(CreateRevision, { secrets: [] }))).secrets).toStrictEqual([])
  })

  it("a revision created by a push carries the stored secrets", () => {
    const push = decodeBody(PushEvent, {
      ref: "refs/heads/main",
      after: "0123456789abcdef0123456789abcdef01234567",
      repository: { clone_url: "https://github.com/acme/agent.git", html_url: "https://github.com/acme/agent", full_name: "acme/agent" }
    })
    expect(revisionForPush(storedGit, push)?.secrets).toStrictEqual(storedGit.secrets)
  })
})

describe("immutability compares whole values", () => {
  it("a listener_config changed on its own is refused, at listener_config only", () => {
    expect(where(ruleIssues(patch(storedImage, { source_config: { listener_id: listenerId, listener_config: { k8s_namespace: "staging" } } })))).toStrictEqual([
      { loc: ["body", "source_config", "listener_config"], type: "frozen_field" }
    ])
    expect(where(ruleIssues(patch(storedImage, { source_config: { listener_config: { k8s_namespace: null } } })))).toStrictEqual([
      { loc: ["body", "source_config", "listener_config"], type: "frozen_field" }
    ])
    expect(ruleIssues(patch(storedImage, { source_config: { listener_config: { k8s_namespace: "staging" } } }))[0]!.msg).toBe(
      "listener_config cannot be changed after creation"
    )
  })

  it("a listener_id changed on its own is refused", () => {
    expect(where(ruleIssues(patch(storedImage, { source_config: { listener_id: integrationId } })))).toStrictEqual([
      { loc: ["body", "source_config", "listener_id"], type: "frozen_field" }
    ])
  })

  it("the same listener_config is accepted", () => {
    expect(Result.isSuccess(patch(storedImage, { source_config: { listener_config: { k8s_namespace: "prod" } } }))).toBe(true)
  })

  it("sameValue: null and absent agree; objects by every key of either side; arrays are not objects", () => {
    expect(sameValue(null, undefined)).toBe(true)
    expect(sameValue(undefined, null)).toBe(true)
    expect(sameValue(null, 0)).toBe(false)
    expect(sameValue("", null)).toBe(false)
    expect(sameValue(1, 1)).toBe(true)
    expect(sameValue(1, 2)).toBe(false)
    expect(sameValue("a", "a")).toBe(true)
    expect(sameValue(1, "1")).toBe(false)
    expect(sameValue({ a: 1 }, { a: 1, b: null })).toBe(true)
    expect(sameValue({ a: 1 }, { a: 1, b: 2 })).toBe(false)
    expect(sameValue({ a: 1, b: 2 }, { a: 1 })).toBe(false)
    expect(sameValue({ a: { b: 1, c: 2 } }, { a: { b: 1, c: 3 } })).toBe(false)
    expect(sameValue({ a: { b: 1, c: 2 } }, { a: { c: 2, b: 1 } })).toBe(true)
    expect(sameValue([1, 2], [1, 2])).toBe(true)
    expect(sameValue([1, 2], [2, 1])).toBe(false)
    expect(sameValue([1], { 0: 1 })).toBe(false)
    expect(sameValue({ 0: 1 }, [1])).toBe(false)
    expect(sameValue({ a: 1 }, 1)).toBe(false)
    expect(sameValue(1, { a: 1 })).toBe(false)
  })
})

describe("push webhook: each signal on its own", () => {
  const sha = "0123456789abcdef0123456789abcdef01234567"
  const repository = { clone_url: "https://github.com/acme/agent.git", html_url: "https://github.com/acme/agent", full_name: "acme/agent" }
  const push = (overrides: Record<string, unknown> = {}) => decodeBody(PushEvent, { ref: "refs/heads/main", after: sha, repository, ...overrides })
  const unrelated = { clone_url: "https://example.org/x/y.git", html_url: "https://example.org/x/y", full_name: "x/y" }

  it("builds on a plain push (the baseline every case below changes one thing of)", () => {
    expect(pushTriggersBuild(storedGit, push())).toBe(true)
    expect(pushTriggersBuild(storedGit, push({ deleted: false }))).toBe(true)
  })

  it("deleted: true alone (with a real commit) is a deletion", () => {
    expect(pushTriggersBuild(storedGit, push({ deleted: true }))).toBe(false)
  })

  it("an all-zero after alone (without deleted) is a deletion", () => {
    expect(pushTriggersBuild(storedGit, push({ after: "0000000000000000000000000000000000000000" }))).toBe(false)
    expect(pushTriggersBuild(storedGit, push({ after: "0000000000000000000000000000000000000001" }))).toBe(true)
    expect(pushTriggersBuild(storedGit, push({ after: "1000000000000000000000000000000000000000" }))).toBe(true)
  })

  it("matches on clone_url alone", () => {
    expect(pushTriggersBuild(storedGit, push({ repository: { ...unrelated, clone_url: "https://github.com/acme/agent.git" } }))).toBe(true)
  })

  it("matches on html_url alone", () => {
    expect(pushTriggersBuild(storedGit, push({ repository: { ...unrelated, html_url: "https://github.com/Acme/Agent" } }))).toBe(true)
  })

  it("matches on full_name alone, as a whole path suffix and in any case", () => {
    expect(pushTriggersBuild(storedGit, push({ repository: { ...unrelated, full_name: "Acme/Agent" } }))).toBe(true)
    expect(pushTriggersBuild(storedGit, push({ repository: { ...unrelated, full_name: "me/agent" } }))).toBe(false)
  })

  it("matches none of them: no build", () => {
    expect(pushTriggersBuild(storedGit, push({ repository: unrelated }))).toBe(false)
  })

  it("needs repo_url and repo_ref set", () => {
    expect(pushTriggersBuild({ ...storedGit, source_config: { ...storedGit.source_config, repo_url: null } }, push())).toBe(false)
    expect(pushTriggersBuild({ ...storedGit, source_revision_config: { ...storedGit.source_revision_config, repo_ref: null } }, push())).toBe(false)
  })

  it("needs build_on_push exactly true", () => {
    expect(pushTriggersBuild({ ...storedGit, source_config: { ...storedGit.source_config, build_on_push: null } }, push())).toBe(false)
  })

  it("refs/heads/main as repo_ref is the branch main", () => {
    const onFullRef = { ...storedGit, source_revision_config: { ...storedGit.source_revision_config, repo_ref: "refs/heads/main" } }
    expect(pushTriggersBuild(onFullRef, push())).toBe(true)
    expect(pushTriggersBuild(onFullRef, push({ ref: "refs/heads/dev" }))).toBe(false)
    expect(pushTriggersBuild(onFullRef, push({ ref: "refs/heads/refs/heads/main" }))).toBe(false)
    expect(revisionForPush(onFullRef, push())?.source_revision_config).toStrictEqual({
      repo_ref: "refs/heads/main",
      graph_config_path: "langgraph.json",
      image_uri: null,
      repo_commit_sha: sha,
      source_tarball_path: null
    })
  })

  it("a bare branch matches only its refs/heads/ ref, never a tag or the bare name", () => {
    expect(pushTriggersBuild(storedGit, push({ ref: "main" }))).toBe(false)
    expect(pushTriggersBuild(storedGit, push({ ref: "refs/tags/main" }))).toBe(false)
    const onTag = { ...storedGit, source_revision_config: { ...storedGit.source_revision_config, repo_ref: "refs/tags/v1" } }
    expect(pushTriggersBuild(onTag, push({ ref: "refs/tags/v1" }))).toBe(false)
    expect(pushTriggersBuild(onTag, push({ ref: "refs/heads/refs/tags/v1" }))).toBe(false)
  })
})

describe("found by mutation testing in rules.ts", () => {
  it("sameValue: an unset value never equals an object, and a scalar never equals an object", () => {
    expect(sameValue(null, { a: 1 })).toBe(false)
    expect(sameValue({ a: 1 }, null)).toBe(false)
    expect(sameValue({}, 1)).toBe(false)
    expect(sameValue(1, {})).toBe(false)
    expect(sameValue("", {})).toBe(false)
  })

  it("messages of the listener and secret rules", () => {
    expect(listenerConfigIssues({ listener_config: { k8s_namespace: "prod" } }).map(({ msg }) => msg)).toStrictEqual(["listener_config requires listener_id"])
    expect(listenerIssues({ listener_id: listenerId }, undefined).map(({ loc, msg }) => ({ loc, msg }))).toStrictEqual([
      { loc: ["body", "source_config", "listener_id"], msg: `Listener ${listenerId} not found` }
    ])
    expect(listenerIssues(null, undefined)).toStrictEqual([])
    expect(listenerIssues(undefined, undefined)).toStrictEqual([])
    expect(listenerConfigIssues(null)).toStrictEqual([])
    const resolved = resolveSecrets([{ name: "NEW", value: secretMask }], [])
    expect(resolved.issues.map(({ msg }) => msg)).toStrictEqual([`${secretMask} is how responses mask secret values; send the real value of new secret 'NEW'`])
  })

  it("create without secrets stores none", () => {
    const plan = ruleValue(
      planCreate(decodeBody(CreateDeployment, { name: "x", source: "external_container", source_revision_config: { image_uri: "a:1" } }), { publicUrl: "https://s" })
    )
    expect(plan.secrets).toStrictEqual([])
  })

  it("gitrepoCustomUrl drops every trailing slash of the base", () => {
    expect(gitrepoCustomUrl("https://slipway.example.com//", "agent")).toBe("https://slipway.example.com/d/agent")
    expect(gitrepoCustomUrl("https://slipway.example.com", "agent")).toBe("https://slipway.example.com/d/agent")
  })

  it("normalizeRepo: every rewrite is anchored where it belongs", () => {
    expect(normalizeRepo("  https://github.com/acme/agent  ")).toBe("github.com/acme/agent")
    expect(normalizeRepo("https://host/agit@b:c")).toBe("host/agit@b:c")
    expect(normalizeRepo("github.com/acme/ab://c")).toBe("github.com/acme/ab://c")
    expect(normalizeRepo("github.com/acme/a@b")).toBe("github.com/acme/a@b")
    expect(normalizeRepo("github.com/www.x")).toBe("github.com/www.x")
    expect(normalizeRepo("github.com/acme/agent//")).toBe("github.com/acme/agent")
    expect(normalizeRepo("github.com/acme/a.github")).toBe("github.com/acme/a.github")
    expect(normalizeRepo("https://user@github.com/acme/agent")).toBe("github.com/acme/agent")
  })

  it("a tag ref never matches a push, even to refs/heads/null", () => {
    const onTag = { ...storedGit, source_revision_config: { ...storedGit.source_revision_config, repo_ref: "refs/tags/v1" } }
    const push = decodeBody(PushEvent, {
      ref: "refs/heads/null",
      after: "0123456789abcdef0123456789abcdef01234567",
      repository: { clone_url: "https://github.com/acme/agent.git", html_url: "https://github.com/acme/agent", full_name: "acme/agent" }
    })
    expect(pushTriggersBuild(onTag, push)).toBe(false)
  })

  it("only a gitrepo deployment builds on push, whatever its stored config says", () => {
    const push = decodeBody(PushEvent, {
      ref: "refs/heads/main",
      after: "0123456789abcdef0123456789abcdef01234567",
      repository: { clone_url: "https://github.com/acme/agent.git", html_url: "https://github.com/acme/agent", full_name: "acme/agent" }
    })
    expect(pushTriggersBuild({ ...storedGit, source: "external_container" }, push)).toBe(false)
  })
})
