/**
 * A minimal RESP (Redis protocol) client: one connection, a few commands, their replies. Enough
 * to check that a deployment's Redis answers (`AUTH` + `PING`); nothing of Slipway talks to Redis
 * otherwise. The socket code is leaf Node code inside one `Effect.callback`: interrupting the
 * effect closes the connection.
 */
import * as net from "node:net"
import { Data, Effect } from "effect"

export type Resp = string | number | null | Error | ReadonlyArray<Resp>

/** The connection failed, or no complete answer came within the time given. */
export class RespError extends Data.TaggedError("RespError")<{ readonly message: string }> {}

export const encodeResp = (args: ReadonlyArray<string>): string => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`

/** Parses one reply at `offset`; undefined when the buffer holds less than one reply. */
export const parseResp = (buf: Buffer, offset: number): { value: Resp; next: number } | undefined => {
  const end = buf.indexOf("\r\n", offset)
  if (end === -1) return undefined
  const type = String.fromCharCode(buf[offset]!)
  const line = buf.toString("utf8", offset + 1, end)
  switch (type) {
    case "+":
      return { value: line, next: end + 2 }
    case "-":
      return { value: new Error(line), next: end + 2 }
    case ":":
      return { value: Number(line), next: end + 2 }
    case "$": {
      const len = Number(line)
      if (len === -1) return { value: null, next: end + 2 }
      if (buf.length < end + 2 + len + 2) return undefined
      return { value: buf.toString("utf8", end + 2, end + 2 + len), next: end + 2 + len + 2 }
    }
    case "*": {
      const n = Number(line)
      if (n === -1) return { value: null, next: end + 2 }
      const items: Resp[] = []
      let next = end + 2
      for (let i = 0; i < n; i++) {
        const item = parseResp(buf, next)
        if (item === undefined) return undefined
        items.push(item.value)
        next = item.next
      }
      return { value: items, next }
    }
    default:
      return { value: new Error(`unexpected RESP type ${JSON.stringify(type)}`), next: buf.length }
  }
}

/** Sends the commands on one connection and answers their replies (a server error is an `Error` reply, not a failure). */
export const redisCommands = (host: string, port: number, commands: ReadonlyArray<ReadonlyArray<string>>, timeoutMs = 2000): Effect.Effect<Array<Resp>, RespError> =>
  Effect.callback<Array<Resp>, RespError>((resume) => {
    const socket = net.connect({ host, port })
    let buf = Buffer.alloc(0)
    const replies: Resp[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      resume(Effect.fail(new RespError({ message: `redis ${host}:${port}: no answer within ${timeoutMs} ms` })))
    }, timeoutMs)
    socket.on("connect", () => socket.write(commands.map(encodeResp).join("")))
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      let offset = 0
      for (;;) {
        const r = parseResp(buf, offset)
        if (r === undefined) break
        replies.push(r.value)
        offset = r.next
      }
      buf = buf.subarray(offset)
      if (replies.length >= commands.length) {
        clearTimeout(timer)
        socket.destroy()
        resume(Effect.succeed(replies))
      }
    })
    socket.on("error", (e) => {
      clearTimeout(timer)
      resume(Effect.fail(new RespError({ message: `redis ${host}:${port}: ${e.message}` })))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      socket.destroy()
    })
  })

/** Whether the Redis at 127.0.0.1:`port` accepts `password` and answers PING. */
export const redisAnswers = (port: number, password: string, timeoutMs = 1000): Effect.Effect<boolean> =>
  redisCommands("127.0.0.1", port, [["AUTH", password], ["PING"]], timeoutMs).pipe(
    Effect.map(([auth, pong]) => auth === "OK" && pong === "PONG"),
    Effect.orElseSucceed(() => false)
  )
