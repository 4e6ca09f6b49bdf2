/**
 * The images a Dockerfile builds from, read from its text: every `FROM` (after the global `ARG`
 * substitution Docker does for `FROM`) and every `COPY`/`ADD --from=` and `RUN --mount=…from=`
 * that names an image rather than an earlier stage or an extra build context. The builder pulls
 * these before the build (outside the build's network namespace, with the registry settings and
 * credentials), so the build itself runs with `--pull=never` and never holds a credential.
 */
import { InvalidReference, parseReference } from "../runtime/local/reference.ts"

export class DockerfileError extends Error {}

interface Instruction {
  readonly keyword: string
  readonly args: string
  readonly line: number
}

/** Splits a Dockerfile into instructions: continuation lines joined, comments and heredoc bodies dropped. */
export const instructions = (text: string): ReadonlyArray<Instruction> => {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  let escape = "\\"
  // Parser directives: leading `# key=value` comments.
  for (const line of lines) {
    const m = /^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$/.exec(line)
    if (!m) break
    if (m[1]!.toLowerCase() === "escape" && (m[2] === "`" || m[2] === "\\")) escape = m[2]
  }
  const out: Array<Instruction> = []
  let current = ""
  let start = 0
  let heredoc: string | undefined
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (heredoc !== undefined) {
      if (line.replace(/^\t+/, "") === heredoc) heredoc = undefined
      continue
    }
    const trimmed = line.trim()
    if (current === "" && (trimmed === "" || trimmed.startsWith("#"))) continue
    if (current !== "" && trimmed.startsWith("#")) continue
    if (current === "") start = i + 1
    const continued = trimmed.endsWith(escape)
    current += (current === "" ? "" : " ") + (continued ? trimmed.slice(0, -1) : trimmed)
    if (continued) continue
    const m = /^(\S+)\s*(.*)$/.exec(current)
    if (m) {
      out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!, line: start })
      const doc = /<<-?(["']?)([A-Za-z_][A-Za-z0-9_]*)\1/.exec(m[2]!)
      if (doc && m[1]!.toUpperCase() !== "FROM") heredoc = doc[2]
    }
    current = ""
  }
  return out
}

/** `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME:+alt}` with `vars`. */
const expand = (input: string, vars: ReadonlyMap<string, string>): string =>
  input.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_all, braced: string | undefined, op: string | undefined, word: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare!
    const value = vars.get(name)
    if (op === "-") return value !== undefined && value !== "" ? value : word ?? ""
    if (op === "+") return value !== undefined && value !== "" ? word ?? "" : ""
    return value ?? ""
  })

/** `NAME=value` or `NAME` pairs of an ARG instruction (quotes removed). */
const argPairs = (args: string): Array<readonly [string, string | undefined]> => {
  const out: Array<readonly [string, string | undefined]> = []
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)(?:=("(?:[^"\\]|\\.)*"|'[^']*'|\S*))?/g)) {
    const raw = m[2]
    out.push([m[1]!, raw === undefined ? undefined : raw.replace(/^(["'])(.*)\1$/, "$2")])
  }
  return out
}

const fromFlag = (args: string): Array<string> => [...args.matchAll(/--from=("[^"]*"|'[^']*'|\S+)/g)].map((m) => m[1]!.replace(/^(["'])(.*)\1$/, "$2"))

/**
 * The image references a Dockerfile needs (normalised: `docker.io/library/node:24`), in order,
 * without duplicates. `buildArgs` override the defaults of global ARGs; `buildContexts` are the
 * names of extra build contexts (`--build-context name=…`), which are not images.
 */
export const baseImages = (
  dockerfile: string,
  options: { readonly buildArgs?: Readonly<Record<string, string>>; readonly buildContexts?: ReadonlyArray<string> } = {}
): ReadonlyArray<string> => {
  const vars = new Map<string, string>()
  const stages: Array<string> = []
  const contexts = new Set((options.buildContexts ?? []).map((c) => c.toLowerCase()))
  const images: Array<string> = []
  let seenFrom = false
  const add = (raw: string, where: number) => {
    const name = raw.toLowerCase()
    if (name === "scratch" || contexts.has(name) || stages.includes(name) || /^\d+$/.test(name)) return
    let ref: string
    try {
      ref = parseReference(raw).reference
    } catch (error) {
      const why = error instanceof InvalidReference ? error.message : String(error)
      throw new DockerfileError(`Dockerfile line ${where}: ${why}`)
    }
    if (!images.includes(ref)) images.push(ref)
  }
  for (const ins of instructions(dockerfile)) {
    if (ins.keyword === "ARG" && !seenFrom) {
      for (const [name, value] of argPairs(ins.args)) {
        const given = options.buildArgs?.[name]
        const v = given ?? (value === undefined ? undefined : expand(value, vars))
        if (v !== undefined) vars.set(name, v)
      }
    } else if (ins.keyword === "FROM") {
      seenFrom = true
      const tokens = ins.args.split(/\s+/).filter((t) => t.length > 0 && !t.startsWith("--"))
      const image = tokens[0]
      if (image === undefined) throw new DockerfileError(`Dockerfile line ${ins.line}: FROM needs an image`)
      add(expand(image, vars), ins.line)
      if (tokens.length >= 3 && tokens[1]!.toLowerCase() === "as") stages.push(tokens[2]!.toLowerCase())
      else stages.push(`\u0000${stages.length}`)
    } else if (ins.keyword === "COPY" || ins.keyword === "ADD") {
      for (const from of fromFlag(ins.args)) add(from, ins.line)
    } else if (ins.keyword === "RUN") {
      for (const m of ins.args.matchAll(/--mount=(\S+)/g))
        for (const part of m[1]!.split(",")) if (part.toLowerCase().startsWith("from=")) add(part.slice(5), ins.line)
    }
  }
  if (!seenFrom) throw new DockerfileError("the Dockerfile has no FROM instruction")
  return images
}
