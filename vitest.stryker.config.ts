import { defineConfig } from "vitest/config"

/**
 * The tests StrykerJS runs against each mutant (npm run mutate): only the core's unit tests of
 * the mutated areas, which need no server, network or tool, so a mutant costs milliseconds.
 */
export default defineConfig({
  test: {
    include: ["test/core/deployments/**/*.test.ts", "test/core/sandboxes/**/*.test.ts"],
    pool: "threads",
    // Mutants are switched on at call time (static mutants are ignored), so modules can be shared
    // between test files: importing effect once instead of per file is most of the speed.
    isolate: false,
    testTimeout: 30_000
  }
})
