/** Argument checks shared by the key tool's commands. */
// @ts-nocheck

import { isUuid } from "../core/index.ts"

/** The value of a `--flag <uuid>` option, lowercased; `fail` names the flag when it is absent or malformed. */
export const requireUuid = (flag: string, value: unknown, fail: (message: string) => never, context = ""): string => {
  if (typeof value !== "string") return fail(`${context}needs --${flag} <uuid>`)
  if (!isUuid(value)) return fail(`--${flag} must be a uuid, got "${value}"`)
  return value.toLowerCase()
}
