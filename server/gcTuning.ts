/**
 * V8 garbage-collector tuning for the server process, applied first thing by `server/main.ts`.
 *
 * Streaming bytes through Node (sandbox uploads and downloads, deployment proxying) allocates a new
 * external buffer per 64 KiB socket read. With V8's own heap-growing factor the old generation's
 * allocation limit stays close to the live heap (~35 MB here), so such traffic starts a full
 * (mark-compact) collection every ~13 MiB moved, each marking the whole heap: in
 * `npm run bench:sandboxes` (files) a third of the server's CPU was major GC. A growing factor of
 * 4 (`--heap-growing-percent=300`) gives V8 room before it starts marking: in the bench a third as
 * many full collections (13 instead of 29-35 for 384 MiB moved) and 30-40 % less server CPU per MiB
 * (docs/bench-sandboxes.md); the heap stayed the same (~36 MB used, ~103 MB committed at each
 * collection, in both runs). The cost is potentially more garbage held between collections.
 *
 * `SLIPWAY_HEAP_GROWING_PERCENT` overrides it (an integer 1–1000; `0` keeps V8's default dynamic
 * factor). V8 reads this flag each time it recomputes its limits, so setting it at start-up
 * (after the heap exists) takes effect from the first collection on.
 */
import { setFlagsFromString } from "node:v8"
import { ConfigError } from "./config.ts"

export const DEFAULT_HEAP_GROWING_PERCENT = 300

/** Applies the setting from `env`; answers the percent in force (0 = V8's default). Throws on a malformed value. */
export const tuneGc = (env: Readonly<Record<string, string | undefined>> = process.env): number => {
  const raw = env.SLIPWAY_HEAP_GROWING_PERCENT
  const percent = raw === undefined || raw.trim() === "" ? DEFAULT_HEAP_GROWING_PERCENT : /^\s*\d{1,4}\s*$/.test(raw) ? Number(raw) : NaN
  if (!Number.isInteger(percent) || percent < 0 || percent > 1000)
    throw new ConfigError(`SLIPWAY_HEAP_GROWING_PERCENT must be an integer from 0 to 1000 (got ${JSON.stringify(raw)})`)
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`)
  return percent
}
