/** The runner's entry (bundled to dist/index.js): runs the action once. The logic is in main.ts. */
import { run } from "./main.ts"

// run() never rejects: every failure is reported through @actions/core and process.exitCode.
void run()
