/**
 * The isolations the real-box suites run under: both (`describe.each(testIsolations)`), unless
 * `SLIPWAY_TEST_ISOLATIONS` narrows them (`bwrap` or `gvisor`, e.g. while working on one of them).
 * A missing `runsc` fails the gVisor suites, naming the Debian package; it never skips them.
 */
import { existsSync } from "node:fs"
import { afterAll, beforeAll } from "vitest"
import type { Isolation } from "../../server/runtime/local/boxes/model.ts"

const ALL: ReadonlyArray<Isolation> = ["bwrap", "gvisor"]

const chosen = (): ReadonlyArray<Isolation> => {
  const value = process.env.SLIPWAY_TEST_ISOLATIONS?.trim()
  if (!value) return ALL
  const names = value.split(",").map((name) => name.trim())
  for (const name of names) if (!(ALL as ReadonlyArray<string>).includes(name)) throw new Error(`SLIPWAY_TEST_ISOLATIONS: unknown isolation ${JSON.stringify(name)} (bwrap, gvisor)`)
  return names as ReadonlyArray<Isolation>
}

export const testIsolations: ReadonlyArray<Isolation> = chosen()

/** Fails (never skips) when the isolation's tool is missing. */
export const requireIsolation = (isolation: Isolation): void => {
  if (isolation === "gvisor" && !existsSync("/usr/bin/runsc")) throw new Error("/usr/bin/runsc is missing: apt-get install -y runsc (gVisor)")
}

/**
 * Runs the suite's servers (in this process: `startTestServer`) with their sandboxes under
 * `isolation`: sets SLIPWAY_SANDBOX_ISOLATION before the suite's own hooks run (call it first in
 * the describe block), restores it after. Fails when the isolation's tool is missing.
 */
export const useIsolation = (isolation: Isolation): void => {
  let saved: string | undefined
  beforeAll(() => {
    requireIsolation(isolation)
    saved = process.env.SLIPWAY_SANDBOX_ISOLATION
    process.env.SLIPWAY_SANDBOX_ISOLATION = isolation
  })
  afterAll(() => {
    if (saved === undefined) delete process.env.SLIPWAY_SANDBOX_ISOLATION
    else process.env.SLIPWAY_SANDBOX_ISOLATION = saved
  })
}
