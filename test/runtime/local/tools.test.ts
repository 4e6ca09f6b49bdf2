import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { cgroupMode, hostTools, hostToolsSummary, isStaticElf, missingToolsMessage } from "../../../server/runtime/local/tools.ts"

const dirs: Array<string> = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe("hostTools", () => {
  it("finds the runtime's tools on this host (the test host has them all)", () => {
    const host = hostTools()
    const missing = missingToolsMessage(host, ["bwrap", "skopeo", "umoci", "nsenter", "busybox", "mkfs.btrfs", "runsc"])
    expect(missing, missing ?? "").toBeNull()
    for (const path of Object.values(host.tools)) expect(path).toMatch(/^\//)
    expect(isStaticElf(host.tools.busybox!)).toBe(true)
    expect(isStaticElf(process.execPath)).toBe(false) // node is dynamically linked
    expect(host.cgroup.mode).not.toBe("none")
    const summary = hostToolsSummary(host)
    expect(summary).toMatch(/^host tools: bwrap=\/\S+ skopeo=\/\S+ umoci=\/\S+ nsenter=\/\S+ busybox\(static\)=\/\S+ mkfs\.btrfs=\/\S+ runsc=\/\S+ cgroup=v[12]\(/)
    expect(summary).not.toContain("\n")
  })

  it("reports missing tools with their Debian packages", () => {
    const host = hostTools({ pathEnv: "/nonexistent" })
    // SEARCH_EXTRA still finds tools in the standard directories; an empty fake host shows the message form
    const none = { tools: { bwrap: null, skopeo: null, umoci: "/usr/bin/umoci", nsenter: null, busybox: null, "mkfs.btrfs": null, runsc: null }, cgroup: { mode: "none" as const } }
    expect(missingToolsMessage(none, ["bwrap", "skopeo", "umoci"])).toBe("missing bwrap, skopeo: install Debian packages bubblewrap skopeo")
    expect(missingToolsMessage(none, ["busybox"])).toBe("missing busybox: install Debian package busybox-static")
    expect(missingToolsMessage(none, ["runsc"])).toBe("missing runsc: install Debian package runsc")
    expect(hostToolsSummary(none)).toContain("bwrap=missing(bubblewrap)")
    expect(hostToolsSummary(none)).toContain("cgroup=none")
    expect(host.tools.skopeo).not.toBeNull()
  })

  it("tells cgroup v1 from v2 from none", () => {
    const v2 = mkdtempSync(join(tmpdir(), "slipway-cg-"))
    dirs.push(v2)
    writeFileSync(join(v2, "cgroup.controllers"), "cpuset cpu io memory pids\n")
    expect(cgroupMode(v2)).toEqual({ mode: "v2", root: v2, controllers: ["cpuset", "cpu", "io", "memory", "pids"], writable: true })
    const v1 = mkdtempSync(join(tmpdir(), "slipway-cg-"))
    dirs.push(v1)
    for (const c of ["memory", "cpu", "pids"]) mkdirSync(join(v1, c))
    expect(cgroupMode(v1)).toEqual({ mode: "v1", root: v1, controllers: ["memory", "cpu", "pids"], writable: true })
    const none = mkdtempSync(join(tmpdir(), "slipway-cg-"))
    dirs.push(none)
    expect(cgroupMode(none)).toEqual({ mode: "none" })
  })
})
