import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { decodeWithIssues } from "../../../core/api/validation.ts"
import {
  BoxStatus,
  CreateBox,
  CreatePool,
  CreateTemplate,
  CreateVolume,
  PatchBox,
  PatchPool,
  PatchVolume,
  Sandbox,
  Template
} from "../../../core/sandboxes/model.ts"
import { formatQuantity } from "../../../core/sandboxes/quantity.ts"

const issuesOf = (schema: Schema.Top, input: unknown) =>
  Result.match(decodeWithIssues(schema, ["body"])(input), { onFailure: (found) => found.map(({ loc, msg, type }) => ({ loc, msg, type })), onSuccess: () => [] })

describe("CreateTemplate", () => {
  const decode = decodeWithIssues(CreateTemplate, ["body"])

  it("defaults resources to 500m CPU and 512Mi memory, and mounts and proxy to empty", () => {
    const template = Result.getOrThrow(decode({ name: "python", image: "python:3.12" }))
    expect(formatQuantity(template.resources.cpu)).toBe("500m")
    expect(formatQuantity(template.resources.memory)).toBe("512Mi")
    expect(template.resources.storage).toBeUndefined()
    expect(template.volume_mounts).toStrictEqual([])
    expect(template.proxy_config).toStrictEqual({ rules: [], no_proxy: [] })
  })

  it("defaults the resource fields that are left out", () => {
    const template = Result.getOrThrow(decode({ name: "python", image: "python:3.12", resources: { memory: "1Gi", storage: "10240Mi" } }))
    expect(formatQuantity(template.resources.cpu)).toBe("500m")
    expect(formatQuantity(template.resources.memory)).toBe("1Gi")
    expect(formatQuantity(template.resources.storage!)).toBe("10Gi")
  })

  it("encodes quantities back in canonical form", () => {
    const template = Result.getOrThrow(decode({ name: "python", image: "python:3.12", resources: { cpu: "0.5", memory: "1024Mi" } }))
    const encoded = Schema.encodeSync(CreateTemplate)(template)
    expect(encoded.resources).toStrictEqual({ cpu: "500m", memory: "1Gi" })
  })

  it("reports every bad field at its loc", () => {
    expect(
      issuesOf(CreateTemplate, {
        name: "Python",
        image: "",
        resources: { cpu: "lots", memory: "0" },
        volume_mounts: [{ volume_name: "data", mount_path: "data" }]
      })
    ).toStrictEqual([
      { loc: ["body", "name"], msg: "must consist of lowercase alphanumeric characters or '-', and must start and end with an alphanumeric character", type: "string_pattern_mismatch" },
      { loc: ["body", "image"], msg: "must be at least 1 character", type: "string_too_short" },
      {
        loc: ["body", "resources", "cpu"],
        msg: "Invalid quantity 'lots': expected a number such as 1.5, optionally followed by a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3",
        type: "quantity_parsing"
      },
      { loc: ["body", "resources", "memory"], msg: "Invalid quantity '0': must be greater than zero", type: "greater_than" },
      { loc: ["body", "volume_mounts", 0, "mount_path"], msg: "must be an absolute path (starting with '/')", type: "value_error" }
    ])
  })

  it("requires name and image", () => {
    expect(issuesOf(CreateTemplate, {})).toStrictEqual([
      { loc: ["body", "name"], msg: "Field required", type: "missing" },
      { loc: ["body", "image"], msg: "Field required", type: "missing" }
    ])
  })

  it.each([
    ["/", "must not be the root directory"],
    ["/data/../etc", "must not contain '..' segments"]
  ])("rejects mount path %j", (mount_path, msg) => {
    expect(issuesOf(CreateTemplate, { name: "t", image: "i", volume_mounts: [{ volume_name: "data", mount_path }] })).toStrictEqual([
      { loc: ["body", "volume_mounts", 0, "mount_path"], msg, type: "value_error" }
    ])
  })

  it("reports a repeated mount path or volume at the later mount", () => {
    expect(
      issuesOf(CreateTemplate, {
        name: "t",
        image: "i",
        volume_mounts: [
          { volume_name: "a", mount_path: "/data" },
          { volume_name: "b", mount_path: "/data" },
          { volume_name: "a", mount_path: "/other" }
        ]
      })
    ).toStrictEqual([
      { loc: ["body", "volume_mounts", 1, "mount_path"], msg: "duplicate mount path '/data'", type: "value_error" },
      { loc: ["body", "volume_mounts", 2, "volume_name"], msg: "volume 'a' is already mounted", type: "value_error" }
    ])
  })

  it("points a bad proxy header reference at the header", () => {
    expect(
      issuesOf(CreateTemplate, {
        name: "t",
        image: "i",
        proxy_config: { rules: [{ name: "r", match_hosts: ["x.com"], inject_headers: { Authorization: "${" } }] }
      })
    ).toStrictEqual([
      { loc: ["body", "proxy_config", "rules", 0, "inject_headers", "Authorization"], msg: "unclosed '${' at position 0: expected '}'", type: "value_error" }
    ])
  })
})

describe("CreateVolume and PatchVolume", () => {
  it("decodes the size exactly and defaults the wait fields", () => {
    const volume = Result.getOrThrow(decodeWithIssues(CreateVolume, ["body"])({ name: "data", size: "10Gi" }))
    expect(formatQuantity(volume.size)).toBe("10Gi")
    expect(volume.storage_class).toBeUndefined()
    expect(volume.wait_for_ready).toBe(false)
    expect(volume.timeout).toBe(60)
  })

  it("rejects a zero, fractional or malformed size and an out-of-range timeout", () => {
    expect(issuesOf(CreateVolume, { name: "data", size: "0", timeout: 0 })).toStrictEqual([
      { loc: ["body", "size"], msg: "Invalid quantity '0': must be greater than zero", type: "greater_than" },
      { loc: ["body", "timeout"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal" }
    ])
    expect(issuesOf(CreateVolume, { name: "data", size: "1.5" })).toStrictEqual([
      { loc: ["body", "size"], msg: "Invalid quantity '1.5': must be a whole number of bytes", type: "value_error" }
    ])
    expect(issuesOf(PatchVolume, { size: "10 Gi" })).toStrictEqual([
      {
        loc: ["body", "size"],
        msg: "Invalid quantity '10 Gi': unknown suffix ' Gi'; expected a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3",
        type: "quantity_parsing"
      }
    ])
  })

  it("lets PATCH send nothing, a name, or a size", () => {
    expect(issuesOf(PatchVolume, {})).toStrictEqual([])
    expect(issuesOf(PatchVolume, { name: "renamed" })).toStrictEqual([])
    expect(issuesOf(PatchVolume, { size: "20Gi" })).toStrictEqual([])
  })
})

describe("pools and boxes", () => {
  it.each([
    [-1, "Input should be greater than or equal to 0", "greater_than_equal"],
    [101, "Input should be less than or equal to 100", "less_than_equal"],
    [1.5, "Input should be a valid integer", "int_from_float"]
  ])("rejects replicas %j", (replicas, msg, type) => {
    expect(issuesOf(CreatePool, { name: "p", template_name: "t", replicas })).toStrictEqual([{ loc: ["body", "replicas"], msg, type }])
    expect(issuesOf(PatchPool, { replicas })).toStrictEqual([{ loc: ["body", "replicas"], msg, type }])
  })

  it("accepts 0 and 100 replicas", () => {
    expect(issuesOf(CreatePool, { name: "p", template_name: "t", replicas: 0 })).toStrictEqual([])
    expect(issuesOf(CreatePool, { name: "p", template_name: "t", replicas: 100 })).toStrictEqual([])
  })

  it("lets a box omit its name, and its template (the current model: a snapshot or the default image)", () => {
    expect(issuesOf(CreateBox, { template_name: "t" })).toStrictEqual([])
    expect(issuesOf(CreateBox, { name: "b" })).toStrictEqual([])
    expect(issuesOf(CreateBox, { snapshot_id: "not-a-uuid", vcpus: 0, mem_bytes: 1, fs_capacity_bytes: 1, ttl_seconds: -1 }).map((issue) => issue.loc.join("."))).toStrictEqual([
      "body.snapshot_id",
      "body.vcpus",
      "body.mem_bytes",
      "body.fs_capacity_bytes",
      "body.ttl_seconds"
    ])
  })

  it("requires a valid name to rename a box; the name and the retention settings are optional", () => {
    expect(issuesOf(PatchBox, {})).toStrictEqual([])
    expect(issuesOf(PatchBox, { idle_ttl_seconds: 60, delete_after_stop_seconds: null })).toStrictEqual([])
    expect(issuesOf(PatchBox, { name: "x".repeat(64) })).toStrictEqual([{ loc: ["body", "name"], msg: "must be at most 63 characters", type: "string_too_long" }])
  })
})

describe("responses", () => {
  const timestamps = { created_at: "2025-01-01T00:00:00.000Z", updated_at: "2025-01-01T00:00:00.000Z" }
  const id = "5b8f7e9c-3f2a-4d1b-9c8e-1a2b3c4d5e6f"

  it("a template carries canonical quantity texts, optional storage and its proxy config", () => {
    const template = {
      id,
      name: "python",
      image: "python:3.12",
      resources: { cpu: "500m", memory: "512Mi" },
      volume_mounts: [{ volume_name: "data", mount_path: "/data" }],
      proxy_config: { rules: [], no_proxy: [] },
      ...timestamps
    }
    expect(Schema.decodeUnknownSync(Template)(template)).toStrictEqual(template)
  })

  it("a sandbox's pool_name is nullable but present", () => {
    const box = { id, name: "b", template_name: "t", pool_name: null, dataplane_url: "http://x/sandboxes/1", status: "ready", status_message: null, ...timestamps }
    expect(Schema.decodeUnknownSync(Sandbox)(box)).toStrictEqual(box)
    const { pool_name: _, ...withoutPool } = box
    expect(() => Schema.decodeUnknownSync(Sandbox)(withoutPool)).toThrow()
  })

  it("a sandbox's dataplane_url is null while no runtime can execute", () => {
    const box = { id, name: "b", template_name: "t", pool_name: null, dataplane_url: null, status: "ready", status_message: null, ...timestamps }
    expect(Schema.decodeUnknownSync(Sandbox)(box)).toStrictEqual(box)
  })

  it("a box status is one of provisioning, ready, failed, stopped, deleting", () => {
    for (const status of ["provisioning", "ready", "failed", "stopped", "deleting"]) {
      expect(Schema.decodeUnknownSync(BoxStatus)({ status, status_message: null })).toStrictEqual({ status, status_message: null })
    }
    expect(Schema.decodeUnknownSync(BoxStatus)({ status: "ready", status_message: null })).toStrictEqual({ status: "ready", status_message: null })
    expect(() => Schema.decodeUnknownSync(BoxStatus)({ status: "running", status_message: null })).toThrow()
  })
})
