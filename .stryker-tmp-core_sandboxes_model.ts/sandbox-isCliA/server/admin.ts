/** Extra commands of the key tool contributed by server areas (e.g. the storage quota). */
// @ts-nocheck

import type { ServerConfig } from "./config.ts"
import type { Db } from "./db/database.ts"
import { integrationCommand } from "./deployments/admin.ts"
import { quotaCommand } from "./sandboxes/admin.ts"

export interface AdminCommand {
  readonly name: string
  readonly usage: string
  readonly run: (input: {
    readonly db: Db
    readonly config: ServerConfig
    readonly values: Record<string, string | boolean | undefined>
    readonly positionals: ReadonlyArray<string>
    readonly fail: (message: string) => never
  }) => void
}

export const adminCommands: ReadonlyArray<AdminCommand> = [quotaCommand, integrationCommand]
