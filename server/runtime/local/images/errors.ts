/** skopeo's and umoci's failures made into short `ImagePullError`s (fit for a `status_message`). */
import { CommandFailed } from "../../ProcessRunner.ts"
import { ImagePullError, type ImagePullErrorKind } from "./model.ts"
import { cut } from "./config.ts"

/** The message of skopeo's `level=fatal msg="…"` line (unescaped), else its last stderr line. */
export const skopeoMessage = (stderr: string): string => {
  const matches = [...stderr.matchAll(/level=fatal msg="((?:[^"\\]|\\.)*)"/g)]
  const last = matches[matches.length - 1]
  let message: string
  if (last) {
    try {
      message = JSON.parse(`"${last[1]}"`) as string
    } catch {
      message = last[1]!
    }
  } else {
    const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l.length > 0)
    message = lines[lines.length - 1] ?? ""
  }
  return message
    .replace(/^Error parsing image name "[^"]*":\s*/, "")
    .replace(/^initializing source \S+:\s*/, "")
    .replace(/^(copying system image from manifest list|choosing an image from manifest list \S+):\s*/, "")
    .replace(/\s+/g, " ") // one line: it ends up in a status_message
    .trim()
}

const firstOf = (text: string, patterns: ReadonlyArray<RegExp>): string | undefined => {
  for (const p of patterns) {
    const m = p.exec(text)
    if (m) return m[0]
  }
  return undefined
}

/** Turns a failed skopeo run into an ImagePullError with a short message. */
export const pullErrorFrom = (
  error: unknown,
  context: { readonly reference: string; readonly registry: string; readonly insecure: boolean; readonly authFile: boolean; readonly step: string }
): ImagePullError => {
  const { reference, registry } = context
  const make = (kind: ImagePullErrorKind, message: string, detail?: string) => new ImagePullError({ kind, message, reference, registry, detail })
  if (!(error instanceof CommandFailed)) {
    return make("failed", `pull ${reference}: ${cut(error instanceof Error ? error.message : String(error))}`)
  }
  const tool = error.argv[0] ?? "skopeo"
  if (error.kind === "spawn") {
    return make("tool_missing", error.errno === "ENOENT" ? `${tool} is not installed (install Debian package ${tool.endsWith("umoci") ? "umoci" : "skopeo"})` : `pull ${reference}: ${error.message}`)
  }
  if (error.kind === "timeout") return make("timeout", `pull ${reference}: ${context.step} timed out`, error.stderrTail)
  const text = skopeoMessage(error.stderrTail)
  const lower = text.toLowerCase()
  const detail = error.stderrTail
  if (/server gave http response to https client/.test(lower)) {
    return make("tls", `registry ${registry} answers plain HTTP, not HTTPS (list it in SLIPWAY_INSECURE_REGISTRIES to allow that)`, detail)
  }
  const network = firstOf(lower, [
    /connection refused/,
    /no such host/,
    /network is unreachable/,
    /no route to host/,
    /i\/o timeout/,
    /connection reset by peer/,
    /tls handshake timeout/,
    /server misbehaving/,
    /eof$/
  ])
  if (network && (/pinging container registry|dial tcp|lookup |\bget "/.test(lower) || network !== "eof")) {
    return make("unreachable", `registry ${registry} unreachable (${network})`, detail)
  }
  if (/x509:|certificate|tls: /.test(lower)) {
    return make("tls", `registry ${registry}: TLS failed (${cut(firstOf(text, [/x509: .*/i, /tls: .*/i]) ?? text, 120)})`, detail)
  }
  if (/unauthorized|authentication required|requested access to the resource is denied|denied:|\b401\b|\b403\b/.test(lower)) {
    return make("unauthorized", `pull ${reference}: unauthorized${context.authFile ? "" : ` (no credentials for ${registry} are configured)`}`, detail)
  }
  if (/manifest unknown/.test(lower)) return make("not_found", `pull ${reference}: manifest unknown`, detail)
  if (/name unknown|repository name not known|not found|\b404\b/.test(lower)) return make("not_found", `pull ${reference}: not found`, detail)
  if (/toomanyrequests|too many requests|\b429\b/.test(lower)) return make("failed", `pull ${reference}: registry ${registry} is rate limiting (too many requests)`, detail)
  if (/no image found in (image index|manifest list) for architecture/.test(lower)) {
    return make("unsupported", `pull ${reference}: no image for this platform (${process.platform}/${process.arch === "x64" ? "amd64" : process.arch})`, detail)
  }
  return make("failed", `pull ${reference}: ${cut(text || error.message)}`, detail)
}

/** Turns a failed umoci unpack into an ImagePullError. */
export const unpackErrorFrom = (error: CommandFailed, reference: string): ImagePullError => {
  if (error.kind === "spawn" && error.errno === "ENOENT") return new ImagePullError({ kind: "tool_missing", message: "umoci is not installed (install Debian package umoci)", reference })
  if (error.kind === "timeout") return new ImagePullError({ kind: "timeout", message: `pull ${reference}: unpacking timed out`, reference, detail: error.stderrTail })
  const message = skopeoMessage(error.stderrTail) || error.message
  return new ImagePullError({ kind: "failed", message: `unpack ${reference}: ${cut(message.replace(/^\s*⨯\s*/, ""))}`, reference, detail: error.stderrTail })
}
