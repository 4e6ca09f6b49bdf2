/**
 * server/gcTuning.ts: the V8 heap-growing setting the server applies at start-up. Its effect
 * (a third as many mark-compacts while bytes stream through the server) is measured by
 * `npm run bench:sandboxes` (files, docs/bench-sandboxes.md): a small synthetic process does not
 * reproduce the server's collection pattern. Here: the setting's parsing and refusals.
 */
import { describe, expect, it } from "vitest"
import { ConfigError } from "../../server/config.ts"
import { DEFAULT_HEAP_GROWING_PERCENT, tuneGc } from "../../server/gcTuning.ts"

describe("GC tuning (SLIPWAY_HEAP_GROWING_PERCENT)", () => {
  it("defaults to 300, accepts 0 (V8's own factor) and integers up to 1000, refuses anything else with a ConfigError", () => {
    expect(DEFAULT_HEAP_GROWING_PERCENT).toBe(300)
    expect(tuneGc({})).toBe(300)
    expect(tuneGc({ SLIPWAY_HEAP_GROWING_PERCENT: " " })).toBe(300)
    expect(tuneGc({ SLIPWAY_HEAP_GROWING_PERCENT: "0" })).toBe(0)
    expect(tuneGc({ SLIPWAY_HEAP_GROWING_PERCENT: "150" })).toBe(150)
    for (const bad of ["-1", "1001", "2.5", "lots", "1e3"]) {
      expect(() => tuneGc({ SLIPWAY_HEAP_GROWING_PERCENT: bad }), bad).toThrow(ConfigError)
    }
    expect(() => tuneGc({ SLIPWAY_HEAP_GROWING_PERCENT: "lots" })).toThrow(/SLIPWAY_HEAP_GROWING_PERCENT must be an integer from 0 to 1000/)
  })
})
