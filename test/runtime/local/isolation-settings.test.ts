/**
 * Which isolation each area's boxes get: the settings (SLIPWAY_SANDBOX_ISOLATION,
 * SLIPWAY_DEPLOYMENT_ISOLATION, runsc's flags) and how `auto` resolves against what the host has.
 */
import { rmSync } from "node:fs"
import path from "node:path"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { buildExecHelper } from "../../../server/runtime/local/execHelper.ts"
import { isolationSettingsFromEnv, resolveIsolation } from "../../../server/runtime/local/isolation.ts"
import { processRunner } from "../../../server/runtime/ProcessRunner.ts"
import { makeTestRunner } from "./harness.ts"
import { removeCgroupParent, requireHostTools, tempDir } from "./support.ts"
import { requireIsolation } from "../../support/isolation.ts"

const CGROUP_PARENT = "slipway-test-isolation-settings"
const base = tempDir("slipway-isolation-settings-")
afterAll(() => {
  rmSync(base, { recursive: true, force: true })
  expect(removeCgroupParent(CGROUP_PARENT)).toBe(true)
})

describe("isolation settings", () => {
  it("default to auto for sandboxes, bwrap for deployments, ptrace and exclusive file access for gVisor; refuse unknown values naming the variable", () => {
    expect(isolationSettingsFromEnv({})).toEqual({ sandboxes: "auto", deployments: "bwrap", gvisor: { platform: "ptrace", fileAccess: "exclusive" } })
    expect(isolationSettingsFromEnv({ SLIPWAY_SANDBOX_ISOLATION: "bwrap", SLIPWAY_DEPLOYMENT_ISOLATION: "gvisor", SLIPWAY_GVISOR_PLATFORM: "kvm", SLIPWAY_GVISOR_FILE_ACCESS: "shared" })).toEqual({
      sandboxes: "bwrap",
      deployments: "gvisor",
      gvisor: { platform: "kvm", fileAccess: "shared" }
    })
    expect(() => isolationSettingsFromEnv({ SLIPWAY_SANDBOX_ISOLATION: "docker" })).toThrow('SLIPWAY_SANDBOX_ISOLATION must be "auto", "bwrap", "gvisor", got "docker"')
    expect(() => isolationSettingsFromEnv({ SLIPWAY_GVISOR_FILE_ACCESS: "cached" })).toThrow(/SLIPWAY_GVISOR_FILE_ACCESS/)
  })

  it("auto is gVisor where it can run, else bwrap, and says why; gvisor where it cannot is an error naming the reason", () => {
    expect(resolveIsolation("SLIPWAY_SANDBOX_ISOLATION", "auto", undefined)).toEqual({ isolation: "gvisor", why: "SLIPWAY_SANDBOX_ISOLATION=auto and runsc can run boxes here" })
    expect(resolveIsolation("SLIPWAY_SANDBOX_ISOLATION", "auto", "no runsc")).toEqual({ isolation: "bwrap", why: "SLIPWAY_SANDBOX_ISOLATION=auto and gVisor cannot run here (no runsc)" })
    expect(resolveIsolation("SLIPWAY_DEPLOYMENT_ISOLATION", "bwrap", undefined)).toEqual({ isolation: "bwrap", why: "SLIPWAY_DEPLOYMENT_ISOLATION=bwrap" })
    expect(resolveIsolation("SLIPWAY_SANDBOX_ISOLATION", "gvisor", "no runsc")).toEqual({ error: "SLIPWAY_SANDBOX_ISOLATION=gvisor, but gVisor cannot run here: no runsc" })
  })

  it("a runner resolves them against this host: without runsc, gvisor is refused naming the Debian package, auto falls back to bwrap", async () => {
    requireHostTools()
    requireIsolation("gvisor")
    const helper = await Effect.runPromise(buildExecHelper(processRunner, path.join(base, "tools")))
    if (!("path" in helper)) throw new Error(helper.error)
    const options = { cgroupParent: CGROUP_PARENT, execHelper: helper.path }
    const here = await makeTestRunner({ ...options, root: path.join(base, "here"), isolation: { sandboxes: "auto" } })
    expect(here.service.isolations).toEqual(["bwrap", "gvisor"])
    expect(here.service.isolationOf.sandboxes).toEqual({ isolation: "gvisor", why: "SLIPWAY_SANDBOX_ISOLATION=auto and runsc can run boxes here" })
    expect(here.service.isolationOf.deployments.isolation).toBe("bwrap")
    const without = { ...options, gvisor: { runsc: path.join(base, "no-runsc") } }
    await expect(makeTestRunner({ ...without, root: path.join(base, "gvisor"), isolation: { sandboxes: "gvisor" } })).rejects.toThrow(
      `SLIPWAY_SANDBOX_ISOLATION=gvisor, but gVisor cannot run here: ${path.join(base, "no-runsc")} is missing (install the Debian package runsc)`
    )
    const fallback = await makeTestRunner({ ...without, root: path.join(base, "auto"), isolation: { sandboxes: "auto", deployments: "auto" } })
    expect(fallback.service.isolations).toEqual(["bwrap"])
    expect(fallback.service.isolationOf.sandboxes.isolation).toBe("bwrap")
    expect(fallback.service.isolationOf.sandboxes.why).toMatch(/runsc is missing \(install the Debian package runsc\)/)
    // A runsc that does not know the platform asked for.
    await expect(makeTestRunner({ ...options, root: path.join(base, "platform"), gvisor: { platform: "systrap" }, isolation: { deployments: "gvisor" } })).rejects.toThrow(
      /SLIPWAY_DEPLOYMENT_ISOLATION=gvisor, but gVisor cannot run here: this runsc knows no platform "systrap"/
    )
  })
})
