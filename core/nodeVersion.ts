/**
 * Imported first by the package's entry points (core/index.ts, server/index.ts): under a Node.js
 * older than the library needs (effect 4 and better-sqlite3 need 22.12+; 24 is what Slipway is
 * tested on), importing `slipway` fails here with a message that says so, instead of a crash
 * deep inside (better-sqlite3's native addon segfaults on Node 20). Outside Node (the console's
 * browser bundle) it does nothing.
 */
export const minimumNode = { major: 22, minor: 12 } as const

export const nodeVersionProblem = (version: string | undefined): string | undefined => {
  if (typeof version !== "string") return undefined
  const [major = 0, minor = 0] = version.split(".").map(Number)
  if (major > minimumNode.major || (major === minimumNode.major && minor >= minimumNode.minor)) return undefined
  return `slipway needs Node.js ${minimumNode.major}.${minimumNode.minor} or later (24 recommended); this is Node.js ${version}`
}

const problem = nodeVersionProblem((globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node)
if (problem !== undefined) throw new Error(problem)
