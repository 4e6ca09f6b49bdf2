/**
 * Where the server keeps state besides the database: beside the database file, or, for an
 * in-memory database, in a directory of this process under the temp directory (it lives as long
 * as the data does).
 */
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"

/** Whether the database lives in a file (`:memory:` and `file:` URIs do not). */
export const isFileDatabase = (databasePath: string): boolean => databasePath !== ":memory:" && databasePath !== "" && !databasePath.startsWith("file:")

/** The directory `name` of the server's state (`<dir of the database>/<name>`). */
export const stateDir = (databasePath: string, name: string): string =>
  isFileDatabase(databasePath) ? join(resolve(dirname(databasePath)), name) : join(process.env.TMPDIR ?? tmpdir(), `slipway-${name}-${process.pid}`)
