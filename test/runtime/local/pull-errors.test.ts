/** The mapping from skopeo's output to short messages, for failures a local registry cannot produce. */
import { describe, expect, it } from "vitest"
import { commandFailed } from "../../../server/runtime/ProcessRunner.ts"
import { pullErrorFrom } from "../../../server/runtime/local/images/errors.ts"

const skopeoFailed = (msg: string) =>
  commandFailed({ argv: ["skopeo", "copy"], kind: "exit", exitCode: 1, stderrTail: `time="2026-11-23T15:33:56Z" level=fatal msg=${JSON.stringify(msg)}\n` })
const context = { reference: "docker.io/library/python:3.12-slim", registry: "docker.io", insecure: false, authFile: false, step: "copying the image" }

describe("pullErrorFrom", () => {
  it.each([
    ['initializing source docker://python:3.12-slim: reading manifest 3.12-slim in docker.io/library/python: toomanyrequests: You have reached your pull rate limit.', "failed", "pull docker.io/library/python:3.12-slim: registry docker.io is rate limiting (too many requests)"],
    ['choosing an image from manifest list docker://x: no image found in manifest list for architecture s390x, variant "", OS linux', "unsupported", /^pull docker\.io\/library\/python:3\.12-slim: no image for this platform \(linux\/\w+\)$/],
    ['pinging container registry registry-1.docker.io: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.53:53: server misbehaving', "unreachable", "registry docker.io unreachable (server misbehaving)"],
    ['pinging container registry docker.io: Get "https://docker.io/v2/": tls: failed to verify certificate: x509: certificate has expired or is not yet valid', "tls", "registry docker.io: TLS failed (x509: certificate has expired or is not yet valid)"],
    ['reading manifest 1 in docker.io/acme/private: requested access to the resource is denied', "unauthorized", "pull docker.io/library/python:3.12-slim: unauthorized (no credentials for docker.io are configured)"],
    ['reading blob sha256:abc: fetching blob: name unknown: repository name not known to registry', "not_found", "pull docker.io/library/python:3.12-slim: not found"],
    ["something nobody expected\nwith a second line", "failed", "pull docker.io/library/python:3.12-slim: something nobody expected with a second line"]
  ])("%s", (message, kind, expected) => {
    const error = pullErrorFrom(skopeoFailed(message), context)
    expect(error.kind).toBe(kind)
    if (typeof expected === "string") expect(error.message).toBe(expected)
    else expect(error.message).toMatch(expected)
    expect(error.registry).toBe("docker.io")
    expect(error.detail).toContain("level=fatal")
  })

  it("cuts long messages and names timeouts and missing tools", () => {
    expect(pullErrorFrom(skopeoFailed("x".repeat(1000)), context).message.length).toBeLessThan(260)
    const timeout = commandFailed({ argv: ["skopeo"], kind: "timeout", detail: "5 ms" })
    expect(pullErrorFrom(timeout, context).message).toBe("pull docker.io/library/python:3.12-slim: copying the image timed out")
    const missing = commandFailed({ argv: ["skopeo"], kind: "spawn", errno: "ENOENT" })
    expect(pullErrorFrom(missing, context)).toMatchObject({ kind: "tool_missing", message: "skopeo is not installed (install Debian package skopeo)" })
  })
})
