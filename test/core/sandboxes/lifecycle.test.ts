import { describe, expect, it } from "vitest"
import {
  type BoxEvent,
  boxFailure,
  boxFailureKind,
  boxFailureKinds,
  type BoxLifecycle,
  boxLifecycles,
  fromErrorResponse,
  nextBoxState,
  SandboxCreationFailed,
  SandboxTimeout,
  toErrorResponse,
  wantsRunning
} from "../../../core/index.ts"

const at = (status: BoxLifecycle, message: string | null = null) => ({ status, status_message: message })

describe("box lifecycle", () => {
  it("provisioning becomes ready when provisioned, failed with the reason when it fails", () => {
    expect(nextBoxState(at("provisioning", "pulling image"), { _tag: "Provisioned" })).toEqual(at("ready"))
    expect(nextBoxState(at("provisioning"), { _tag: "Failed", message: "pull failed" })).toEqual(at("failed", "pull failed"))
    expect(nextBoxState(at("ready"), { _tag: "Failed", message: "crashed" })).toEqual(at("failed", "crashed"))
  })

  it("progress only updates the message of a provisioning box", () => {
    expect(nextBoxState(at("provisioning"), { _tag: "Progress", message: "unpacking" })).toEqual(at("provisioning", "unpacking"))
    expect(nextBoxState(at("ready"), { _tag: "Progress", message: "late" })).toBeNull()
  })

  it("stop applies to a running box; start to a stopped or failed one", () => {
    expect(nextBoxState(at("ready"), { _tag: "Stop" })).toEqual(at("stopped"))
    expect(nextBoxState(at("stopped"), { _tag: "Stop" })).toBeNull()
    expect(nextBoxState(at("stopped"), { _tag: "Start" })).toEqual(at("provisioning"))
    expect(nextBoxState(at("failed", "x"), { _tag: "Start" })).toEqual(at("provisioning"))
    expect(nextBoxState(at("ready"), { _tag: "Start" })).toBeNull()
  })

  it("a late report cannot bring a stopped, failed or deleting box back", () => {
    for (const status of ["stopped", "failed", "deleting"] as const) expect(nextBoxState(at(status), { _tag: "Provisioned" })).toBeNull()
  })

  it("delete applies from every state but deleting, and nothing applies once deleting", () => {
    const events: Array<BoxEvent> = [{ _tag: "Provisioned" }, { _tag: "Failed", message: "x" }, { _tag: "Stop" }, { _tag: "Start" }, { _tag: "Delete" }, { _tag: "Resume" }]
    for (const status of boxLifecycles) {
      if (status === "deleting") for (const event of events) expect(nextBoxState(at(status), event)).toBeNull()
      else expect(nextBoxState(at(status), { _tag: "Delete" })).toEqual(at("deleting"))
    }
  })

  it("a resume after a restart makes a box that should run provisioning again, and leaves the others", () => {
    expect(nextBoxState(at("ready"), { _tag: "Resume" })).toEqual(at("provisioning", "restarting after a server restart"))
    expect(nextBoxState(at("stopped"), { _tag: "Resume" })).toBeNull()
    expect(nextBoxState(at("failed", "x"), { _tag: "Resume" })).toBeNull()
  })

  it("wants processes running only while provisioning or ready", () => {
    expect(boxLifecycles.filter(wantsRunning)).toEqual(["provisioning", "ready"])
  })

  it("a failure's status_message says what failed in words, and its kind reads back from it", () => {
    expect(boxFailure("ImagePull", "pull docker.io/library/x:1: not found")).toBe("image pull failed: pull docker.io/library/x:1: not found")
    for (const kind of boxFailureKinds) expect(boxFailureKind(boxFailure(kind, "detail"))).toBe(kind)
    // A runtime's own words, or none, are a configuration failure.
    expect(boxFailureKind("something else")).toBe("SandboxConfig")
    expect(boxFailureKind(null)).toBe("SandboxConfig")
    expect(boxFailureKind("image pull failed")).toBe("SandboxConfig")
  })
})

describe("a create with wait_for_ready that did not end ready", () => {
  it("answers 422 with the failure's kind and 408 for a timeout, and a client reads both back", () => {
    const failed = new SandboxCreationFailed({ reason: "ImagePull", message: "sandbox x failed: image pull failed: …" })
    expect(toErrorResponse(failed)).toEqual({ status: 422, body: { detail: { error: "ImagePull", message: failed.message } } })
    expect(fromErrorResponse(422, toErrorResponse(failed).body)).toEqual(failed)
    const late = new SandboxTimeout({ message: "sandbox x is not ready after 1 s" })
    expect(toErrorResponse(late)).toEqual({ status: 408, body: { detail: { error: "Timeout", message: late.message } } })
    expect(fromErrorResponse(408, toErrorResponse(late).body)).toEqual(late)
    // A validation 422 stays one.
    expect(fromErrorResponse(422, { detail: [{ loc: ["body", "name"], msg: "bad", type: "value_error" }] })._tag).toBe("ValidationError")
  })
})
