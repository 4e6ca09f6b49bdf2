import { describe, expect, it } from "vitest"
import { InvalidReference, parseMirror, parseReference, sourceOf } from "../../../server/runtime/local/reference.ts"
import { imageStoreOptionsFromEnv } from "../../../server/runtime/local/ImageStore.ts"

const digest = `sha256:${"a".repeat(64)}`

describe("parseReference (Docker's normalisation)", () => {
  it.each([
    ["python:3.12-slim", "docker.io/library/python:3.12-slim"],
    ["python", "docker.io/library/python:latest"],
    ["user/img", "docker.io/user/img:latest"],
    ["docker.io/python:3", "docker.io/library/python:3"],
    ["index.docker.io/library/python:3", "docker.io/library/python:3"],
    ["ghcr.io/org/team/app:v1.2.3", "ghcr.io/org/team/app:v1.2.3"],
    ["localhost/app", "localhost/app:latest"],
    ["localhost:5000/app:1", "localhost:5000/app:1"],
    ["127.0.0.1:5055/slipway-test/busybox:1", "127.0.0.1:5055/slipway-test/busybox:1"],
    ["[::1]:5000/app:1", "[::1]:5000/app:1"],
    ["Registry.Example.com/app", "Registry.Example.com/app:latest"],
    ["foo:5000", "docker.io/library/foo:5000"],
    [`app@${digest}`, `docker.io/library/app@${digest}`],
    [`app:1@${digest}`, `docker.io/library/app:1@${digest}`],
    ["a__b/c-d.e_f:TAG_1.0-x", "docker.io/a__b/c-d.e_f:TAG_1.0-x"]
  ])("%s -> %s", (input, normalised) => {
    expect(parseReference(input).reference).toBe(normalised)
  })

  it("splits the parts", () => {
    expect(parseReference(`localhost:5000/a/b:1@${digest}`)).toEqual({
      domain: "localhost:5000",
      path: "a/b",
      tag: "1",
      digest,
      name: "localhost:5000/a/b",
      reference: `localhost:5000/a/b:1@${digest}`
    })
    expect(parseReference(`a@${digest}`).tag).toBeUndefined()
  })

  it.each([
    ["", /empty/],
    ["-x", /must not start with '-'/],
    ["--privileged", /must not start with '-'/],
    ["a b", /whitespace or control/],
    ["a\nb", /whitespace or control/],
    ["a\u0000", /whitespace or control/],
    ["docker://busybox", /not a URL/],
    ["Busybox", /lowercase/],
    ["team/App", /lowercase/],
    ["a/../b", /repository name/],
    ["a//b", /repository name/],
    ["a/", /repository name/],
    [":tag", /missing repository name/],
    ["a:-x", /tag must be/],
    [`a:${"t".repeat(129)}`, /tag must be/],
    ["a@sha256:abc", /digest must be/],
    [`a@sha256:${"A".repeat(64)}`, /digest must be/],
    [`a@md5:${"a".repeat(32)}`, /digest must be/],
    ["-h.example.com/a", /must not start/],
    ["host_.example.com:5000/a", /invalid registry host/],
    [`r.io/${"a".repeat(260)}`, /longer than 255/]
  ])("refuses %j", (input, why) => {
    expect(() => parseReference(input)).toThrow(InvalidReference)
    expect(() => parseReference(input)).toThrow(why)
  })

  it("quotes the input safely in the message", () => {
    try {
      parseReference(`evil\n${"x".repeat(200)}`)
      expect.unreachable()
    } catch (error) {
      expect((error as Error).message).not.toContain("\n")
      expect((error as Error).message.length).toBeLessThan(160)
    }
  })
})

describe("mirror", () => {
  it.each([
    ["127.0.0.1:5055", { domain: "127.0.0.1:5055", prefix: "", insecure: false }],
    ["http://127.0.0.1:5055/", { domain: "127.0.0.1:5055", prefix: "", insecure: true }],
    ["https://mirror.gcr.io", { domain: "mirror.gcr.io", prefix: "", insecure: false }],
    ["https://mirror.example.com/hub", { domain: "mirror.example.com", prefix: "hub", insecure: false }]
  ])("parses %s", (input, expected) => {
    expect(parseMirror(input)).toEqual(expected)
  })

  it.each(["", "ftp://x", "http://", "http://a b", "x/UPPER"])("refuses %j", (input) => {
    expect(() => parseMirror(input)).toThrow(/registry mirror/)
  })

  it("maps only Docker Hub references", () => {
    const mirror = parseMirror("http://127.0.0.1:5055")
    expect(sourceOf(parseReference("python:3.12-slim"), mirror)).toEqual({ domain: "127.0.0.1:5055", name: "127.0.0.1:5055/library/python" })
    expect(sourceOf(parseReference("user/img"), parseMirror("m.example.com/hub"))).toEqual({ domain: "m.example.com", name: "m.example.com/hub/user/img" })
    expect(sourceOf(parseReference("ghcr.io/a/b"), mirror)).toEqual({ domain: "ghcr.io", name: "ghcr.io/a/b" })
    expect(sourceOf(parseReference("python"), undefined)).toEqual({ domain: "docker.io", name: "docker.io/library/python" })
  })
})

describe("imageStoreOptionsFromEnv", () => {
  it("reads the variables", () => {
    expect(
      imageStoreOptionsFromEnv({
        SLIPWAY_REGISTRY_MIRROR: "http://127.0.0.1:5055",
        SLIPWAY_INSECURE_REGISTRIES: " 127.0.0.1:5055, registry.lan ,",
        SLIPWAY_REGISTRY_AUTH_FILE: "/etc/slipway/auth.json",
        SLIPWAY_IMAGE_PULL_TIMEOUT_S: "600"
      })
    ).toEqual({
      mirror: "http://127.0.0.1:5055",
      insecureRegistries: ["127.0.0.1:5055", "registry.lan"],
      authFile: "/etc/slipway/auth.json",
      timeouts: { copyMs: 600_000, unpackMs: 600_000 }
    })
    expect(imageStoreOptionsFromEnv({})).toEqual({ mirror: undefined, insecureRegistries: undefined, authFile: undefined, timeouts: undefined })
  })

  it("refuses bad values at start-up", () => {
    expect(() => imageStoreOptionsFromEnv({ SLIPWAY_REGISTRY_MIRROR: "ftp://x" })).toThrow(/registry mirror/)
    expect(() => imageStoreOptionsFromEnv({ SLIPWAY_INSECURE_REGISTRIES: "a b" })).toThrow(/insecure registry/)
    expect(() => imageStoreOptionsFromEnv({ SLIPWAY_IMAGE_PULL_TIMEOUT_S: "soon" })).toThrow(/SLIPWAY_IMAGE_PULL_TIMEOUT_S/)
  })
})
