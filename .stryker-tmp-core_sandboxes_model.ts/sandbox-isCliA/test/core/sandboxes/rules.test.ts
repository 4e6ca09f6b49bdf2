// @ts-nocheck
import { Result } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { QuotaExceeded, ResizeError, ResourceInUse, SandboxValidationError, TemplateNotFound, toErrorResponse, ValidationError } from "../../../core/api/errors.ts"
import { formatQuantity, parseQuantity } from "../../../core/sandboxes/quantity.ts"
import type { Quantity } from "../../../core/sandboxes/quantity.ts"
import {
  checkBoxTemplate,
  checkPoolTemplate,
  checkTemplateDeletable,
  checkTemplateVolumes,
  checkVolumeCreate,
  checkVolumeDeletable,
  planPoolDeletion,
  planPoolScale,
  planVolumeResize,
  resolveStorageClass
} from "../../../core/sandboxes/rules.ts"

const q = (text: string): Quantity => Result.getOrThrow(parseQuantity(text))
const failure = <E>(result: Result.Result<unknown, E>): E => Result.getOrThrow(Result.flip(result))

describe("planVolumeResize", () => {
  const volume = { name: "v", size: q("20Gi") }

  it("refuses to shrink, naming both sizes in canonical form", () => {
    const error = failure(planVolumeResize(volume, q("10240Mi"), q("20Gi"), q("100Gi")))
    expect(error).toBeInstanceOf(ResizeError)
    expect(error.message).toBe("cannot shrink volume v from 20Gi to 10Gi")
    expect(toErrorResponse(error)).toStrictEqual({ status: 400, body: { detail: { error: "ResizeError", message: "cannot shrink volume v from 20Gi to 10Gi" } } })
  })

  it("grows within the quota and reports the increase", () => {
    const plan = Result.getOrThrow(planVolumeResize(volume, q("30Gi"), q("80Gi"), q("100Gi")))
    expect(formatQuantity(plan.size)).toBe("30Gi")
    expect(formatQuantity(plan.increase)).toBe("10Gi")
  })

  it("allows growth that lands exactly on the quota", () => {
    expect(Result.isSuccess(planVolumeResize(volume, q("40Gi"), q("80Gi"), q("100Gi")))).toBe(true)
  })

  it("refuses growth past the quota with limit, usage and increase", () => {
    const error = failure(planVolumeResize(volume, q("30Gi"), q("95Gi"), q("100Gi")))
    expect(error).toBeInstanceOf(QuotaExceeded)
    expect(error.message).toBe("Storage quota exceeded: limit 100Gi, current usage 95Gi, requested increase 10Gi")
    expect(toErrorResponse(error).status).toBe(429)
  })

  it("accepts an unchanged size even when the organization is over quota", () => {
    const plan = Result.getOrThrow(planVolumeResize(volume, q("20480Mi"), q("150Gi"), q("100Gi")))
    expect(formatQuantity(plan.increase)).toBe("0")
  })

  it("never shrinks and never passes the quota (property)", () => {
    const gib = fc.integer({ min: 1, max: 1000 })
    fc.assert(
      fc.property(gib, gib, gib, gib, (current, requested, otherUsage, quota) => {
        const result = planVolumeResize({ name: "v", size: q(`${current}Gi`) }, q(`${requested}Gi`), q(`${current + otherUsage}Gi`), q(`${quota}Gi`))
        if (requested < current) return Result.isFailure(result) && result.failure instanceof ResizeError
        const fits = requested === current || requested + otherUsage <= quota
        return fits ? Result.isSuccess(result) : Result.isFailure(result) && result.failure instanceof QuotaExceeded
      })
    )
  })
})

describe("checkVolumeCreate", () => {
  it("counts the whole size against the quota", () => {
    expect(Result.isSuccess(checkVolumeCreate(q("5Gi"), q("95Gi"), q("100Gi")))).toBe(true)
    expect(failure(checkVolumeCreate(q("6Gi"), q("95Gi"), q("100Gi"))).message).toBe(
      "Storage quota exceeded: limit 100Gi, current usage 95Gi, requested increase 6Gi"
    )
  })

  it("compares exact bytes, not rounded text", () => {
    expect(Result.isFailure(checkVolumeCreate(q("1"), q("100Gi"), q("100Gi")))).toBe(true)
    // 99Gi + 1G is 73741824 bytes short of 100Gi; 2G is not.
    expect(Result.isSuccess(checkVolumeCreate(q("1G"), q("99Gi"), q("100Gi")))).toBe(true)
    expect(failure(checkVolumeCreate(q("2G"), q("99Gi"), q("100Gi"))).requested).toBe("2G")
  })
})

describe("resolveStorageClass", () => {
  const allowed = ["standard", "fast"]

  it("defaults to standard and accepts allowed classes", () => {
    expect(resolveStorageClass(undefined, allowed)).toStrictEqual(Result.succeed("standard"))
    expect(resolveStorageClass("fast", allowed)).toStrictEqual(Result.succeed("fast"))
  })

  it("defaults to the first allowed class when standard is not offered", () => {
    expect(resolveStorageClass(undefined, ["ssd", "hdd"])).toStrictEqual(Result.succeed("ssd"))
  })

  it("answers 422 at body.storage_class listing the allowed classes", () => {
    const error = failure(resolveStorageClass("gold", allowed))
    expect(error).toBeInstanceOf(ValidationError)
    expect(toErrorResponse(error)).toStrictEqual({
      status: 422,
      body: { detail: [{ loc: ["body", "storage_class"], msg: "Input should be 'standard' or 'fast'", type: "enum" }] }
    })
    expect(failure(resolveStorageClass("gold", ["a", "b", "c"])).issues[0]!.msg).toBe("Input should be 'a', 'b' or 'c'")
  })
})

describe("checkTemplateDeletable", () => {
  it.each([
    [2, 1, "template t is used by 2 sandboxes and 1 pool"],
    [1, 0, "template t is used by 1 sandbox"],
    [0, 3, "template t is used by 3 pools"],
    [1, 2, "template t is used by 1 sandbox and 2 pools"]
  ])("%i sandboxes and %i pools → %j", (sandboxes, pools, message) => {
    const error = failure(checkTemplateDeletable("t", sandboxes, pools))
    expect(error).toBeInstanceOf(ResourceInUse)
    expect(toErrorResponse(error)).toStrictEqual({ status: 409, body: { detail: { error: "ResourceInUse", message } } })
  })

  it("lets an unused template go", () => {
    expect(Result.isSuccess(checkTemplateDeletable("t", 0, 0))).toBe(true)
  })
})

describe("checkVolumeDeletable", () => {
  it("refuses while templates mount it, naming them", () => {
    expect(failure(checkVolumeDeletable("v", ["a"])).message).toBe("volume v is mounted by 1 template (a)")
    expect(failure(checkVolumeDeletable("v", ["a", "b"])).message).toBe("volume v is mounted by 2 templates (a, b)")
    expect(failure(checkVolumeDeletable("v", ["a"]))).toBeInstanceOf(ResourceInUse)
  })

  it("lets an unmounted volume go", () => {
    expect(Result.isSuccess(checkVolumeDeletable("v", []))).toBe(true)
  })
})

describe("template references", () => {
  const plain = { name: "t", volume_mounts: [] }
  const mounting = { name: "t", volume_mounts: [{ volume_name: "data" }, { volume_name: "cache" }] }

  it("a pool on an unknown template is TemplateNotFound (400)", () => {
    const error = failure(checkPoolTemplate("t", undefined))
    expect(error).toBeInstanceOf(TemplateNotFound)
    expect(toErrorResponse(error)).toStrictEqual({ status: 400, body: { detail: { error: "TemplateNotFound", message: "template t not found" } } })
  })

  it("a pool on a template that mounts volumes is a ValidationError (400)", () => {
    const error = failure(checkPoolTemplate("t", mounting))
    expect(error).toBeInstanceOf(SandboxValidationError)
    expect(toErrorResponse(error)).toStrictEqual({
      status: 400,
      body: {
        detail: {
          error: "ValidationError",
          message: "template t mounts volumes (data, cache) and cannot be used by a pool: a volume attaches to a single sandbox"
        }
      }
    })
  })

  it("a pool on a template without volumes gets the template back", () => {
    expect(checkPoolTemplate("t", plain)).toStrictEqual(Result.succeed(plain))
  })

  it("a box may use a template with volumes but not an unknown one", () => {
    expect(checkBoxTemplate("t", mounting)).toStrictEqual(Result.succeed(mounting))
    expect(failure(checkBoxTemplate("t", undefined))).toBeInstanceOf(TemplateNotFound)
  })

  it("a template may only mount existing volumes", () => {
    expect(Result.isSuccess(checkTemplateVolumes([{ volume_name: "data" }], ["data", "other"]))).toBe(true)
    const error = failure(checkTemplateVolumes([{ volume_name: "data" }, { volume_name: "gone" }], ["data"]))
    expect(error).toBeInstanceOf(SandboxValidationError)
    expect(error.message).toBe("volume gone not found")
  })
})

describe("planPoolScale", () => {
  const boxes = ["p-1", "p-2", "p-3"]

  it("creates the missing sandboxes when scaling up", () => {
    expect(planPoolScale(boxes, 5)).toStrictEqual({ create: 2, remove: [] })
  })

  it("removes the newest sandboxes first when scaling down", () => {
    expect(planPoolScale(boxes, 1)).toStrictEqual({ create: 0, remove: ["p-3", "p-2"] })
    expect(planPoolScale(boxes, 0)).toStrictEqual({ create: 0, remove: ["p-3", "p-2", "p-1"] })
  })

  it("does nothing at the current size", () => {
    expect(planPoolScale(boxes, 3)).toStrictEqual({ create: 0, remove: [] })
  })

  it("always ends at exactly `replicas` sandboxes, keeping the oldest (property)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string(), { maxLength: 20 }), fc.integer({ min: 0, max: 100 }), (names, replicas) => {
        const plan = planPoolScale(names, replicas)
        const kept = names.filter((name) => !plan.remove.includes(name))
        return kept.length + plan.create === replicas && kept.every((name, index) => names[index] === name)
      })
    )
  })
})

describe("planPoolDeletion", () => {
  it("takes exactly the pool's sandboxes", () => {
    const boxes = [
      { name: "a", pool_name: "p" },
      { name: "b", pool_name: null },
      { name: "c", pool_name: "other" },
      { name: "d", pool_name: "p" }
    ]
    expect(planPoolDeletion({ name: "p" }, boxes).map((box) => box.name)).toStrictEqual(["a", "d"])
    expect(planPoolDeletion({ name: "none" }, boxes)).toStrictEqual([])
  })
})
