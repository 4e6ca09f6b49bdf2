// @ts-nocheck
import { defineConfig } from "vitest/config"

// CI asks for a JSON report as well (see .ci/run); locally the default reporter is enough.
const jsonReport = process.env.VITEST_JSON

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // HTTP and action suites start real servers; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    ...(jsonReport ? { reporters: ["default", "json"], outputFile: { json: jsonReport } } : {})
  }
})
