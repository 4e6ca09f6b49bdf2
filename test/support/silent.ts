/** A "registry" that accepts connections and never answers (pulls from it hang), and the processes talking to it. */
import { readdirSync, readFileSync } from "node:fs"
import { createServer, type Socket } from "node:net"

export const startSilentRegistry = async (): Promise<{ readonly host: string; readonly stop: () => Promise<void> }> => {
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => {
    sockets.add(socket)
    socket.on("error", () => undefined)
  })
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
  return {
    host: `127.0.0.1:${(silent.address() as { port: number }).port}`,
    stop: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  }
}

/** Pids of the processes whose command line contains `text` (a pull's skopeo names its image). */
export const processesMentioning = (text: string): Array<string> =>
  readdirSync("/proc").filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text)
    } catch {
      return false
    }
  })
