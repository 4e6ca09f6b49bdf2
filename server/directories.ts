/**
 * `mkdir -p` that always ends. Node's `mkdirSync(path, { recursive: true })` never returns when a
 * parent exists but cannot hold the child: procfs answers ENOENT for `mkdir /proc/x`, and so does
 * a dangling symlink, and Node then creates the parent (EEXIST), retries the child (ENOENT), and so
 * on forever, at 100% CPU with the event loop stopped (bun fixed the same walk in its own code;
 * Node 24 still loops). This creates each missing directory from the top down, once, and throws the
 * first refusal (ENOENT, EACCES, ENOTDIR...) with the path it was refused for.
 */
import { existsSync, mkdirSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"

export const makeDirectory = (path: string, mode?: number): void => {
  const target = resolve(path)
  const missing: Array<string> = []
  for (let dir = target; !existsSync(dir); dir = dirname(dir)) {
    missing.push(dir)
    if (dirname(dir) === dir) break
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir, mode === undefined ? undefined : { mode })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
  }
  if (!statSync(target).isDirectory()) {
    throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${target}'`), { code: "ENOTDIR", path: target })
  }
}
