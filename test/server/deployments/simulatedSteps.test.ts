/** The simulated driver's steps: the core's happy path, with a status message on arrival at DEPLOYED. */
import { describe, expect, it } from "vitest"
import { simulatedStep } from "../../../server/deployments/drivers/simulated.ts"

describe("simulated steps", () => {
  it("walks the happy path of each source and stops after DEPLOYED", () => {
    expect(simulatedStep("CREATING", "gitrepo")).toStrictEqual({ status: "QUEUED", message: null })
    expect(simulatedStep("QUEUED", "external_container")).toStrictEqual({ status: "AWAITING_DEPLOY", message: null })
    expect(simulatedStep("DEPLOYING", "gitrepo")).toStrictEqual({ status: "DEPLOYED", message: "Deployed" })
    expect(simulatedStep("DEPLOYED", "gitrepo")).toBeNull()
  })
})
