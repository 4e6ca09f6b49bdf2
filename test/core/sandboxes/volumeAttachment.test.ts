import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { checkPoolTemplate, checkVolumeAttachment } from "../../../core/index.ts"

const mounting = { volume_mounts: [{ volume_name: "data" }, { volume_name: "cache" }] }

describe("checkVolumeAttachment: one rule for boxes and pools", () => {
  it("lets any number of sandboxes use a template without volumes", () => {
    expect(Result.isSuccess(checkVolumeAttachment("t", { volume_mounts: [] }, "pool", []))).toBe(true)
    expect(Result.isSuccess(checkVolumeAttachment("t", { volume_mounts: [] }, "box", [{ volume_name: "data", sandbox_name: "b" }]))).toBe(true)
  })

  it("lets one box mount free volumes, refuses a box when one of its volumes is attached, and always refuses a pool", () => {
    expect(Result.isSuccess(checkVolumeAttachment("t", mounting, "box", []))).toBe(true)
    expect(Result.isSuccess(checkVolumeAttachment("t", mounting, "box", [{ volume_name: "other", sandbox_name: "b" }]))).toBe(true)
    const box = checkVolumeAttachment("t", mounting, "box", [{ volume_name: "cache", sandbox_name: "box-1" }])
    const pool = checkVolumeAttachment("t", mounting, "pool", [])
    for (const refused of [box, pool]) {
      expect(Result.isFailure(refused)).toBe(true)
      if (Result.isFailure(refused)) {
        expect(refused.failure._tag).toBe("SandboxValidationError")
        expect(refused.failure.message).toContain("template t mounts volumes (data, cache)")
        expect(refused.failure.message).toMatch(/: a volume attaches to a single sandbox$/)
      }
    }
    if (Result.isFailure(box)) expect(box.failure.message).toContain("volume cache is attached to sandbox box-1")
  })

  it("is what checkPoolTemplate applies", () => {
    const result = checkPoolTemplate("t", mounting)
    expect(Result.isFailure(result) && result.failure.message).toBe(
      "template t mounts volumes (data, cache) and cannot be used by a pool: a volume attaches to a single sandbox"
    )
  })
})
