/**
 * A real OCI registry for tests: Debian's `docker-registry` (CNCF distribution) on a free loopback
 * port with a temporary storage directory; plain HTTP (list `host` as an insecure registry) unless
 * `tls` asks for HTTPS with a self-signed certificate.
 *
 *   const registry = await startRegistry()                  // or startRegistry({ auth: { username, password }, tls: true })
 *   registry.host                                           // "127.0.0.1:PORT"
 *   registry.authFile                                       // with auth: a docker-config JSON for the credentials
 *   await registry.stop()                                   // kills it and removes its directory
 *
 * The registry runs under `setpriv --pdeathsig SIGKILL` when available, so a test process that dies
 * without calling stop() does not leave it running.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import bcrypt from "bcryptjs"
import { runCommand } from "./run.ts"
import { which } from "../../server/runtime/local/tools.ts"
import { sweepDeadDirectories } from "./sweep.ts"

export interface RegistryCredentials {
  readonly username: string
  readonly password: string
}

export interface TestRegistry {
  /** `127.0.0.1:PORT` */
  readonly host: string
  /** With `auth`: a docker-config JSON (`{"auths":{host:{auth}}}`) holding the credentials. */
  readonly authFile: string | undefined
  readonly credentials: RegistryCredentials | undefined
  /** With `tls`: the self-signed certificate (PEM) the registry presents. */
  readonly ca: string | undefined
  /** Temporary directory holding the config, storage and log. */
  readonly dir: string
  /** The registry's log so far (for failure messages). */
  readonly log: () => string
  readonly stop: () => Promise<void>
}

/** A port free on loopback right now (another process may take it before it is used). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const running = new Set<ChildProcess>()
let exitHook = false
const killAllOnExit = () => {
  if (exitHook) return
  exitHook = true
  process.on("exit", () => {
    for (const child of running) {
      try {
        child.kill("SIGKILL")
      } catch {
        // gone
      }
    }
  })
}

const DIR_PREFIX = "slipway-registry-"

const sweepDeadRegistries = () => sweepDeadDirectories(DIR_PREFIX)

/** GET /v2/ over HTTP, or HTTPS trusting `ca`; resolves to the status code. */
const probe = (host: string, ca: string | undefined): Promise<number> =>
  new Promise((resolve, reject) => {
    const [hostname, port] = host.split(":") as [string, string]
    const request = (ca ? httpsRequest : httpRequest)({ hostname, port: Number(port), path: "/v2/", method: "GET", timeout: 1000, ...(ca ? { ca } : {}) }, (response) => {
      response.resume()
      response.on("end", () => resolve(response.statusCode ?? 0))
    })
    request.on("timeout", () => request.destroy(new Error("timeout")))
    request.on("error", reject)
    request.end()
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A docker-config JSON granting `credentials` on `host`. */
export const authFileContent = (host: string, credentials: RegistryCredentials): string =>
  JSON.stringify({ auths: { [host]: { auth: Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64") } } }, null, 2) + "\n"

export const startRegistry = async (
  options: {
    readonly auth?: RegistryCredentials
    /** Serve HTTPS with a fresh self-signed certificate for 127.0.0.1 (made with openssl). */
    readonly tls?: boolean
    readonly readyTimeoutMs?: number
  } = {}
): Promise<TestRegistry> => {
  const binary = which("docker-registry")
  if (binary === null) throw new Error("docker-registry not found: install Debian package docker-registry")
  const openssl = options.tls ? which("openssl") : null
  if (options.tls && openssl === null) throw new Error("openssl not found: install Debian package openssl")
  const setpriv = which("setpriv")
  const readyTimeoutMs = options.readyTimeoutMs ?? 15_000
  killAllOnExit()

  let lastError: Error | undefined
  for (let attempt = 0; attempt < 5; attempt++) {
    sweepDeadRegistries()
    const dir = mkdtempSync(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`))
    const port = await freePort()
    const host = `127.0.0.1:${port}`
    const lines = [
      "version: 0.1",
      "log: { level: error, accesslog: { disabled: true } }",
      `storage: { filesystem: { rootdirectory: ${JSON.stringify(join(dir, "data"))} }, delete: { enabled: true } }`,
      `http: { addr: ${JSON.stringify(host)}${options.tls ? `, tls: { certificate: ${JSON.stringify(join(dir, "cert.pem"))}, key: ${JSON.stringify(join(dir, "key.pem"))} }` : ""} }`
    ]
    let ca: string | undefined
    if (openssl !== null) {
      await runCommand(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
          "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
          "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
        { timeoutMs: 30_000 }
      )
      ca = readFileSync(join(dir, "cert.pem"), "utf8")
    }
    let authFile: string | undefined
    if (options.auth) {
      const htpasswd = join(dir, "htpasswd")
      // bcrypt is the one hash format distribution's htpasswd backend accepts.
      writeFileSync(htpasswd, `${options.auth.username}:${bcrypt.hashSync(options.auth.password, 4)}\n`)
      lines.push(`auth: { htpasswd: { realm: slipway-test, path: ${JSON.stringify(htpasswd)} } }`)
      authFile = join(dir, "auth.json")
      writeFileSync(authFile, authFileContent(host, options.auth), { mode: 0o600 })
    }
    const config = join(dir, "config.yml")
    writeFileSync(config, lines.join("\n") + "\n")
    const logPath = join(dir, "registry.log")
    const logFd = openSync(logPath, "a")
    const argv = setpriv ? [setpriv, "--pdeathsig", "SIGKILL", binary, "serve", config] : [binary, "serve", config]
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", logFd, logFd] })
    closeSync(logFd)
    running.add(child)
    let exited = false
    const exitedPromise = new Promise<void>((resolve) =>
      child.once("exit", () => {
        exited = true
        running.delete(child)
        resolve()
      })
    )
    child.once("error", () => undefined)
    const log = () => {
      try {
        return readFileSync(logPath, "utf8")
      } catch {
        return ""
      }
    }
    const stop = async () => {
      if (!exited) {
        child.kill("SIGTERM")
        const killer = setTimeout(() => child.kill("SIGKILL"), 3000)
        await exitedPromise
        clearTimeout(killer)
      }
      rmSync(dir, { recursive: true, force: true })
    }

    const deadline = Date.now() + readyTimeoutMs
    let ready = false
    while (!exited && Date.now() < deadline) {
      try {
        const status = await probe(host, ca)
        // 200 without auth; 401 with auth: either way it is serving.
        if (status === 200 || (options.auth && status === 401)) {
          ready = true
          break
        }
      } catch {
        // not listening yet
      }
      await sleep(25)
    }
    if (ready) return { host, authFile, credentials: options.auth, dir, ca, log, stop }
    const output = log()
    await stop()
    lastError = new Error(`docker-registry did not start on ${host}${exited ? " (it exited)" : ""}: ${output.trim().split("\n").slice(-3).join(" | ")}`)
    // Someone took the port between our probe and its bind: try another one.
    if (!/address already in use/.test(output)) break
  }
  throw lastError ?? new Error("docker-registry did not start")
}
