/** Temp directories named `<prefix><pid>-…` whose test process is gone (killed before its cleanup) are removed. */
import { readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

export const sweepDeadDirectories = (prefix: string): void => {
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(prefix)) continue
    const pid = Number(entry.slice(prefix.length).split("-")[0])
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !alive(pid)) rmSync(join(tmpdir(), entry), { recursive: true, force: true })
  }
}
