/**
 * The per-stream output log: byte offsets over canonical UTF-8, a bounded ring, and splits that
 * never cut a character (properties over random text and random read sizes).
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { OutputLog, splitUtf8 } from "../../../server/sandboxes/dataplane/output.ts"

/** Feeds `bytes` in pieces at the given cut points. */
const feed = (log: OutputLog, bytes: Buffer, cuts: ReadonlyArray<number>) => {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const emitted = []
  let from = 0
  for (const at of [...points, bytes.length]) {
    const chunk = log.append(bytes.subarray(from, at))
    if (chunk) emitted.push(chunk)
    from = at
  }
  const last = log.finish()
  if (last) emitted.push(last)
  return emitted
}

const decodesCleanly = (data: Buffer) => Buffer.from(data.toString("utf8"), "utf8").equals(data)

describe("OutputLog", () => {
  it("keeps offsets contiguous and chunks whole-character however the process's writes are cut", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), fc.array(fc.nat(), { maxLength: 20 }), (text, cuts) => {
        const log = new OutputLog(1 << 20)
        const bytes = Buffer.from(text, "utf8")
        const chunks = feed(log, bytes, cuts)
        let offset = 0
        for (const chunk of chunks) {
          expect(chunk.offset).toBe(offset)
          expect(decodesCleanly(chunk.data)).toBe(true)
          offset += chunk.data.length
        }
        expect(Buffer.concat(chunks.map((c) => c.data)).equals(bytes)).toBe(true)
        expect(log.end).toBe(bytes.length)
      })
    )
  })

  it("trims to its limit at character boundaries and replays exactly the retained suffix", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 300 }), fc.integer({ min: 4, max: 64 }), fc.nat(400), fc.integer({ min: 1, max: 9 }), (text, limit, from, frame) => {
        const log = new OutputLog(limit)
        const bytes = Buffer.from(text, "utf8")
        feed(log, bytes, [7, 19, 33])
        expect(log.end - log.start).toBeLessThanOrEqual(limit)
        const replay = log.readFrom(from, frame)
        const joined = Buffer.concat(replay.map((c) => c.data))
        if (replay.length > 0) {
          const first = replay[0]!.offset
          expect(first).toBeGreaterThanOrEqual(Math.max(from, log.start))
          expect(joined.equals(bytes.subarray(first))).toBe(true)
        } else {
          expect(Math.max(from, log.start)).toBeGreaterThanOrEqual(log.end - 3)
        }
        for (const piece of replay) {
          expect(decodesCleanly(piece.data)).toBe(true)
          expect(piece.data.length).toBeLessThanOrEqual(Math.max(frame, 4))
        }
      })
    )
  })

  it("turns invalid UTF-8 into U+FFFD and counts the replacement's bytes", () => {
    const log = new OutputLog(1024)
    const a = log.append(Buffer.from([0x61, 0xff, 0x62]))
    expect(a).toEqual({ offset: 0, data: Buffer.from("a\uFFFDb") })
    expect(log.append(Buffer.from([0xe2, 0x82]))).toBeUndefined()
    expect(log.finish()).toEqual({ offset: 5, data: Buffer.from("\uFFFD") })
    expect(log.end).toBe(8)
  })

  it("splits a long chunk into frames without cutting a character", () => {
    const data = Buffer.from("€".repeat(10), "utf8")
    const pieces = splitUtf8({ offset: 100, data }, 7)
    expect(pieces.map((p) => p.data.toString())).toEqual(["€€", "€€", "€€", "€€", "€€"])
    expect(pieces.map((p) => p.offset)).toEqual([100, 106, 112, 118, 124])
  })
})
