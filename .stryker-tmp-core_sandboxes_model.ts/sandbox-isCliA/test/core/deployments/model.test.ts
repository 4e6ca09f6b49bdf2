// @ts-nocheck
import { describe, expect, it } from "vitest"
import {
  CreateDeployment,
  CreateListener,
  CreateRevision,
  Deployment,
  maskSecrets,
  PatchDeployment,
  PushEvent,
  secretMask
} from "../../../core/deployments/index.ts"
import { bodyIssues, decodeBody, where } from "./helpers.ts"

const external = (resource_spec: unknown) => ({
  name: "api",
  source: "external_container",
  source_config: { resource_spec },
  source_revision_config: { image_uri: "registry.example.com/agent:1" }
})

const specLoc = ["body", "source_config", "resource_spec"] as const

describe("CreateDeployment: top-level fields", () => {
  it("accepts a minimal external_container body and a full gitrepo body", () => {
    expect(decodeBody(CreateDeployment, external(null)).name).toBe("api")
    const body = decodeBody(CreateDeployment, {
      name: "my-agent-2",
      source: "gitrepo",
      source_config: {
        integration_id: "6f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e",
        repo_url: "https://github.com/acme/agent",
        deployment_type: "dev",
        build_on_push: true,
        install_command: "pnpm install",
        build_command: null
      },
      source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" },
      secrets: [{ name: "OPENAI_API_KEY", value: "sk-1" }],
      image_version: "0.2"
    })
    expect(body.source_config?.deployment_type).toBe("dev")
  })

  it("requires name and source", () => {
    expect(bodyIssues(CreateDeployment, {})).toStrictEqual([
      { loc: ["body", "name"], msg: "Field required", type: "missing" },
      { loc: ["body", "source"], msg: "Field required", type: "missing" }
    ])
  })

  it.each([
    ["", "string_too_short"],
    ["a".repeat(64), "string_too_long"],
    ["My-Agent", "string_pattern_mismatch"],
    ["my_agent", "string_pattern_mismatch"],
    ["my agent", "string_pattern_mismatch"]
  ])("rejects the deployment name %j (%s)", (name, type) => {
    expect(where(bodyIssues(CreateDeployment, { ...external(null), name }))).toStrictEqual([{ loc: ["body", "name"], type }])
  })

  it("accepts names of 1 and 63 characters of [a-z0-9-]", () => {
    expect(decodeBody(CreateDeployment, { ...external(null), name: "a" }).name).toBe("a")
    expect(decodeBody(CreateDeployment, { ...external(null), name: "a-1".repeat(21) }).name).toHaveLength(63)
  })

  it("rejects an unknown source as an enum error", () => {
    expect(where(bodyIssues(CreateDeployment, { ...external(null), source: "docker" }))).toStrictEqual([{ loc: ["body", "source"], type: "enum" }])
  })

  it("rejects unknown keys at every level", () => {
    const issues = bodyIssues(CreateDeployment, {
      ...external({ cpu: 1, gpu: 1 }),
      extra: true,
      source_revision_config: { image_uri: "x", tag: "y" }
    })
    expect(where(issues)).toStrictEqual([
      { loc: ["body", "extra"], type: "extra_forbidden" },
      { loc: [...specLoc, "gpu"], type: "extra_forbidden" },
      { loc: ["body", "source_revision_config", "tag"], type: "extra_forbidden" }
    ])
  })

  it("checks enums and types of source_config fields", () => {
    const issues = bodyIssues(CreateDeployment, {
      name: "x",
      source: "gitrepo",
      source_config: { deployment_type: "staging", build_on_push: "yes", integration_id: "not-a-uuid", custom_url: "ftp://x" }
    })
    expect(where(issues)).toStrictEqual([
      { loc: ["body", "source_config", "integration_id"], type: "uuid_parsing" },
      { loc: ["body", "source_config", "deployment_type"], type: "enum" },
      { loc: ["body", "source_config", "build_on_push"], type: "bool_type" },
      { loc: ["body", "source_config", "custom_url"], type: "url_parsing" }
    ])
  })

  it("rejects duplicate secret names at the repeated entry", () => {
    const issues = bodyIssues(CreateDeployment, {
      ...external(null),
      secrets: [
        { name: "A", value: "1" },
        { name: "B", value: "2" },
        { name: "A", value: "3" }
      ]
    })
    expect(issues).toStrictEqual([{ loc: ["body", "secrets", 2, "name"], msg: "Duplicate secret name 'A'", type: "value_error" }])
  })

  it("requires both name and value of a secret", () => {
    expect(where(bodyIssues(CreateDeployment, { ...external(null), secrets: [{ name: "A" }] }))).toStrictEqual([
      { loc: ["body", "secrets", 0, "value"], type: "missing" }
    ])
  })
})

describe("ResourceSpec", () => {
  it("accepts every field of spec 2.5", () => {
    const spec = {
      min_scale: 1,
      max_scale: 3,
      cpu: 1,
      cpu_limit: 2,
      memory_mb: 1024,
      memory_limit_mb: 2048,
      queue_min_scale: 1,
      queue_max_scale: 2,
      queue_cpu: 1,
      queue_cpu_limit: 2,
      queue_memory_mb: 512,
      queue_memory_limit_mb: 1024,
      orchestrator_cpu: 1,
      orchestrator_cpu_limit: 1,
      orchestrator_memory_mb: 256,
      orchestrator_memory_limit_mb: 256,
      orchestrator_min_scale: 0,
      orchestrator_max_scale: 1,
      executor_cpu: 1,
      executor_cpu_limit: 1,
      executor_memory_mb: 256,
      executor_memory_limit_mb: 256,
      redis_memory_mb: 128,
      labels: { team: "ai" },
      annotations: { "example.com/owner": "me" },
      service_account_name: "agent",
      image_pull_secrets: [{ name: "regcred" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }, { name: "cache", emptyDir: {} }],
      volume_mounts: [{ name: "data", mountPath: "/data", readOnly: false, subPath: "x", mountPropagation: "None", subPathExpr: null }],
      init_containers: [{ name: "migrate", image: "migrate:1", command: ["run"], args: ["--all"], restartPolicy: "OnFailure" }],
      sidecars: [
        {
          name: "proxy",
          image: "envoy:1",
          imagePullPolicy: "IfNotPresent",
          workingDir: "/",
          env: [{ name: "LEVEL", value: "debug" }, { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }, { name: "EMPTY", value: "", valueFrom: {} }],
          envFrom: [{ configMapRef: { name: "cfg" } }],
          resources: { limits: { cpu: "500m" }, requests: { memory: "64Mi" } },
          volumeMounts: [{ name: "cache", mountPath: "/cache" }],
          securityContext: { runAsNonRoot: true },
          restartPolicy: "Always"
        }
      ],
      db_cpu: 0.5,
      db_cpu_limit: 1,
      db_memory_mb: 512,
      db_memory_limit_mb: 1024,
      db_storage_gi: 10,
      db_max_connections: 100
    }
    expect(decodeBody(CreateDeployment, external(spec)).source_config?.resource_spec).toStrictEqual(spec)
  })

  it("reads integers pydantic-style and refuses zero or negative amounts", () => {
    expect(where(bodyIssues(CreateDeployment, external({ cpu: 1.5, memory_mb: "512", max_scale: -1, db_storage_gi: 0, db_cpu: 0 })))).toStrictEqual([
      { loc: [...specLoc, "max_scale"], type: "greater_than_equal" },
      { loc: [...specLoc, "cpu"], type: "int_from_float" },
      { loc: [...specLoc, "memory_mb"], type: "int_type" },
      { loc: [...specLoc, "db_cpu"], type: "greater_than" },
      { loc: [...specLoc, "db_storage_gi"], type: "greater_than_equal" }
    ])
  })

  it("allows max_scale 0 (scaled to zero)", () => {
    expect(decodeBody(CreateDeployment, external({ min_scale: 0, max_scale: 0 })).source_config?.resource_spec?.max_scale).toBe(0)
  })

  it("reports a volume mount of an undeclared volume at the mount's name", () => {
    expect(bodyIssues(CreateDeployment, external({ volumes: [{ name: "data" }], volume_mounts: [{ name: "data", mountPath: "/a" }, { name: "logs", mountPath: "/b" }] }))).toStrictEqual([
      {
        loc: [...specLoc, "volume_mounts", 1, "name"],
        msg: "Volume mount 'logs' does not name a volume declared in resource_spec.volumes",
        type: "value_error"
      }
    ])
  })

  it("checks the volume mounts of init containers and sidecars too", () => {
    const issues = bodyIssues(
      CreateDeployment,
      external({
        volumes: [{ name: "data" }],
        init_containers: [{ name: "init", image: "i", volumeMounts: [{ name: "data", mountPath: "/d" }, { name: "nope", mountPath: "/n" }] }],
        sidecars: [{ name: "side", image: "s", volumeMounts: [{ name: "gone", mountPath: "/g" }] }]
      })
    )
    expect(where(issues)).toStrictEqual([
      { loc: [...specLoc, "init_containers", 0, "volumeMounts", 1, "name"], type: "value_error" },
      { loc: [...specLoc, "sidecars", 0, "volumeMounts", 0, "name"], type: "value_error" }
    ])
  })

  it("requires unique volume names and unique container names across init containers and sidecars", () => {
    const issues = bodyIssues(
      CreateDeployment,
      external({
        volumes: [{ name: "data" }, { name: "data" }],
        init_containers: [{ name: "helper", image: "a" }],
        sidecars: [{ name: "proxy", image: "b" }, { name: "helper", image: "c" }]
      })
    )
    expect(issues).toStrictEqual([
      { loc: [...specLoc, "volumes", 1, "name"], msg: "Duplicate volume name 'data'", type: "value_error" },
      { loc: [...specLoc, "sidecars", 1, "name"], msg: "Duplicate container name 'helper'", type: "value_error" }
    ])
  })

  it.each(["Data", "-data", "data-", "da_ta", "a".repeat(64)])("rejects the volume name %j (not a DNS label)", (name) => {
    expect(where(bodyIssues(CreateDeployment, external({ volumes: [{ name }] })))).toStrictEqual([
      { loc: [...specLoc, "volumes", 0, "name"], type: "string_pattern_mismatch" }
    ])
  })

  it("rejects container names that are not DNS labels and env names that are not C identifiers", () => {
    const issues = bodyIssues(CreateDeployment, external({ sidecars: [{ name: "Proxy", image: "p", env: [{ name: "OK_1" }, { name: "1BAD" }, { name: "A-B" }] }] }))
    expect(where(issues)).toStrictEqual([
      { loc: [...specLoc, "sidecars", 0, "name"], type: "string_pattern_mismatch" },
      { loc: [...specLoc, "sidecars", 0, "env", 1, "name"], type: "string_pattern_mismatch" },
      { loc: [...specLoc, "sidecars", 0, "env", 2, "name"], type: "string_pattern_mismatch" }
    ])
  })

  it("rejects valueFrom combined with a non-empty value, at valueFrom", () => {
    expect(bodyIssues(CreateDeployment, external({ init_containers: [{ name: "i", image: "i", env: [{ name: "A", value: "x", valueFrom: { secretKeyRef: {} } }] }] }))).toStrictEqual([
      {
        loc: [...specLoc, "init_containers", 0, "env", 0, "valueFrom"],
        msg: "valueFrom cannot be combined with a non-empty value",
        type: "value_error"
      }
    ])
  })

  it("checks imagePullPolicy and restartPolicy against their enums and requires name and image", () => {
    const issues = bodyIssues(CreateDeployment, external({ sidecars: [{ imagePullPolicy: "Sometimes", restartPolicy: "Never" }] }))
    expect(where(issues)).toStrictEqual([
      { loc: [...specLoc, "sidecars", 0, "name"], type: "missing" },
      { loc: [...specLoc, "sidecars", 0, "image"], type: "missing" },
      { loc: [...specLoc, "sidecars", 0, "imagePullPolicy"], type: "enum" },
      { loc: [...specLoc, "sidecars", 0, "restartPolicy"], type: "enum" }
    ])
  })

  it("requires name and mountPath of a volume mount and name of an image pull secret", () => {
    const issues = bodyIssues(CreateDeployment, external({ volume_mounts: [{ readOnly: "no" }], image_pull_secrets: [{}] }))
    expect(where(issues)).toStrictEqual([
      { loc: [...specLoc, "image_pull_secrets", 0, "name"], type: "missing" },
      { loc: [...specLoc, "volume_mounts", 0, "name"], type: "missing" },
      { loc: [...specLoc, "volume_mounts", 0, "mountPath"], type: "missing" },
      { loc: [...specLoc, "volume_mounts", 0, "readOnly"], type: "bool_type" }
    ])
  })

  it("reports min > max and request > limit at the field that was set", () => {
    expect(bodyIssues(CreateDeployment, external({ min_scale: 3, max_scale: 1, memory_mb: 1024, memory_limit_mb: 512 }))).toStrictEqual([
      { loc: [...specLoc, "max_scale"], msg: "max_scale (1) must be greater than or equal to min_scale (3)", type: "value_error" },
      { loc: [...specLoc, "memory_limit_mb"], msg: "memory_limit_mb (512) must be greater than or equal to memory_mb (1024)", type: "value_error" }
    ])
  })

  it("validates listener_config.k8s_namespace as a DNS label", () => {
    expect(where(bodyIssues(CreateDeployment, { ...external(null), source_config: { listener_config: { k8s_namespace: "Prod NS" } } }))).toStrictEqual([
      { loc: ["body", "source_config", "listener_config", "k8s_namespace"], type: "string_pattern_mismatch" }
    ])
  })
})

describe("other request bodies", () => {
  it("PatchDeployment accepts an empty body and nulls everywhere", () => {
    expect(decodeBody(PatchDeployment, {})).toStrictEqual({})
    expect(decodeBody(PatchDeployment, { name: null, source: null, source_config: null, source_revision_config: null, secrets: null, image_version: null })).toBeDefined()
  })

  it("PatchDeployment rejects unknown keys", () => {
    expect(where(bodyIssues(PatchDeployment, { status: "READY" }))).toStrictEqual([{ loc: ["body", "status"], type: "extra_forbidden" }])
  })

  it("CreateRevision takes only source_revision_config and secrets", () => {
    expect(decodeBody(CreateRevision, { source_revision_config: { image_uri: "x:2" } }).source_revision_config?.image_uri).toBe("x:2")
    expect(where(bodyIssues(CreateRevision, { source_config: {} }))).toStrictEqual([{ loc: ["body", "source_config"], type: "extra_forbidden" }])
  })

  it("CreateListener defaults compute_type to k8s and needs at least one unique namespace", () => {
    expect(decodeBody(CreateListener, { compute_config: { k8s_namespaces: ["prod"] } })).toStrictEqual({ compute_type: "k8s", compute_config: { k8s_namespaces: ["prod"] } })
    expect(where(bodyIssues(CreateListener, { compute_type: "ecs", compute_config: { k8s_namespaces: [] } }))).toStrictEqual([
      { loc: ["body", "compute_type"], type: "literal_error" },
      { loc: ["body", "compute_config", "k8s_namespaces"], type: "too_short" }
    ])
    expect(where(bodyIssues(CreateListener, { compute_config: { k8s_namespaces: ["a", "B", "a"] } }))).toStrictEqual([
      { loc: ["body", "compute_config", "k8s_namespaces", 1], type: "string_pattern_mismatch" }
    ])
    expect(where(bodyIssues(CreateListener, { compute_config: { k8s_namespaces: ["a", "b", "a"] } }))).toStrictEqual([
      { loc: ["body", "compute_config", "k8s_namespaces", 2], type: "value_error" }
    ])
  })

  it("PushEvent keeps the fields we use and tolerates the rest of GitHub's payload", () => {
    const push = decodeBody(PushEvent, {
      ref: "refs/heads/main",
      after: "abc123",
      before: "000",
      pusher: { name: "me" },
      repository: { clone_url: "https://github.com/acme/agent.git", html_url: "https://github.com/acme/agent", full_name: "acme/agent", id: 1 }
    })
    expect(push.ref).toBe("refs/heads/main")
    expect(where(bodyIssues(PushEvent, { ref: 1, repository: {} }))).toStrictEqual([
      { loc: ["body", "ref"], type: "string_type" },
      { loc: ["body", "after"], type: "missing" },
      { loc: ["body", "repository", "clone_url"], type: "missing" },
      { loc: ["body", "repository", "html_url"], type: "missing" },
      { loc: ["body", "repository", "full_name"], type: "missing" }
    ])
  })
})

describe("Deployment wire shape", () => {
  const deployment = {
    name: "api",
    source: "external_container",
    source_config: { custom_url: null, resource_spec: null },
    source_revision_config: { image_uri: "x:1", repo_ref: null, graph_config_path: null, repo_commit_sha: null },
    secrets: maskSecrets([{ name: "A", value: "secret" }]),
    id: "6f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e",
    created_at: "2025-01-01T00:00:00.000Z",
    updated_at: "2025-01-01T00:00:00.000Z",
    status: "AWAITING_DATABASE",
    latest_revision_id: "7f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e",
    active_revision_id: null
  }

  it("masks secret values in responses", () => {
    expect(deployment.secrets).toStrictEqual([{ name: "A", value: secretMask }])
    expect(secretMask).toBe("********")
  })

  it("decodes with every required field and fails without one", () => {
    expect(decodeBody(Deployment, deployment).status).toBe("AWAITING_DATABASE")
    const { active_revision_id: _, ...withoutActive } = deployment
    expect(where(bodyIssues(Deployment, withoutActive))).toStrictEqual([{ loc: ["body", "active_revision_id"], type: "missing" }])
  })
})
