import { describe, expect, it } from "vitest"
import { CommandFailed, runCommand } from "../../../server/runtime/local/command.ts"

const fails = async (promise: Promise<unknown>): Promise<CommandFailed> => {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(CommandFailed)
    return error as CommandFailed
  }
  throw new Error("expected the command to fail")
}

describe("runCommand", () => {
  it("passes argv without a shell and collects stdout and stderr", async () => {
    const result = await runCommand(["/bin/sh", "-c", 'printf "%s|" "$@"; echo oops >&2', "sh", "a b", "$HOME", "--x", "`id`"])
    expect(result.stdout).toBe("a b|$HOME|--x|`id`|")
    expect(result.stdoutBytes.equals(Buffer.from(result.stdout))).toBe(true)
    expect(result.stderr).toBe("oops\n")
  })

  it("feeds input and adds env", async () => {
    const result = await runCommand(["/bin/sh", "-c", 'cat; printf "%s" "$GREETING"'], { input: "piped ", env: { GREETING: "hello" } })
    expect(result.stdout).toBe("piped hello")
    const clean = await runCommand(["/usr/bin/env"], { cleanEnv: true, env: { ONLY: "1" } })
    expect(clean.stdout).toBe("ONLY=1\n")
  })

  it("fails with the exit code and the tail of stderr", async () => {
    const error = await fails(runCommand(["/bin/sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 3"]))
    expect(error.kind).toBe("exit")
    expect(error.exitCode).toBe(3)
    expect(error.stderrTail).toBe("first\nthe reason\n")
    expect(error.message).toBe("/bin/sh exited with code 3: the reason")
  })

  it("fails when the tool is missing", async () => {
    const error = await fails(runCommand(["/nonexistent/tool", "x"]))
    expect(error.kind).toBe("spawn")
    expect(error.errno).toBe("ENOENT")
    expect(error.message).toMatch(/^\/nonexistent\/tool could not start \(not found\)/)
  })

  it("kills the whole process group on timeout", async () => {
    const started = Date.now()
    // the shell starts a child sleep that would keep stdout open if only the shell were killed
    const error = await fails(runCommand(["/bin/sh", "-c", "sleep 30 & echo $! ; wait"], { timeoutMs: 300 }))
    expect(error.kind).toBe("timeout")
    expect(error.message).toMatch(/timed out after 300 ms/)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it("reports signals, aborts and oversized output", async () => {
    expect((await fails(runCommand(["/bin/sh", "-c", "kill -TERM $$"]))).kind).toBe("signal")
    const controller = new AbortController()
    const pending = runCommand(["/bin/sleep", "30"], { signal: controller.signal })
    setTimeout(() => controller.abort(), 50)
    expect((await fails(pending)).kind).toBe("aborted")
    const big = await fails(runCommand(["/bin/sh", "-c", "head -c 100000 /dev/zero"], { maxStdoutBytes: 1000 }))
    expect(big.kind).toBe("output")
  })

  it("streams lines as they come", async () => {
    const lines: Array<string> = []
    await runCommand(["/bin/sh", "-c", "echo one; echo two >&2; printf three"], { onLine: (line, stream) => lines.push(`${stream}:${line}`) })
    expect(lines.sort()).toEqual(["stderr:two", "stdout:one", "stdout:three"])
  })
})
