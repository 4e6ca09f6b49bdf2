/**
 * Several replicas with real workloads (issue 31, docs/replicas.md): three `node server/main.ts`
 * processes on one PostgreSQL database, each with the local runtime and a data directory of its
 * own, as on three machines. Every dataplane path and the deployment URL reached through a replica
 * that does not run the box or serve the deployment; a box whose volume lives on another replica;
 * the internal headers refused without the shared secret; a replica killed with SIGKILL while a
 * client polls the deployment URL through another one (the URL serves again within the lease plus
 * the image's start, with no new revision; its boxes become failed with the reason); that replica
 * started again on its data directory leaving nothing of its previous life running (processes,
 * mounts, loop devices, cgroups); and a replica with another secrets key refused at start.
 *
 * Needs root and the local runtime's Debian packages (bubblewrap, skopeo, umoci, busybox-static,
 * btrfs-progs), postgresql, redis-server and docker-registry.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { connect } from "node:net"
import { join } from "node:path"
import pg from "pg"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { derivedPassword } from "../../server/deployments/local/databases.ts"
import { cgroupParentFor } from "../../server/runtime/local/RuntimeRoot.ts"
import { detectLimitsMode, listCgroups } from "../../server/runtime/local/cgroups.ts"
import { parentPid } from "../../server/runtime/local/host.ts"
import { openFrameSocket, streamText, type Frame } from "../support/dataplane-server.ts"
import { buildTestImages } from "../support/images.ts"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { runCommand } from "../support/run.ts"
import { type PostgresServer, queryDatabase, startPostgres } from "../support/postgres.ts"
import { stopChild } from "../reliability/support.ts"
import { type ChildServer, eventually, spawnServer, TEST_KEY, tempDatabasePath } from "../support/server.ts"

const LEASE_MS = 4000
const TOKEN = randomBytes(24).toString("hex")
const SECRETS_KEY = randomBytes(32).toString("hex")
/** The load balancer's address every replica names in its URLs (nothing listens there: the test asks each replica directly). */
const PUBLIC_URL = "http://slipway-lb.test"

/** Answers any request: an upgrade with 101 and then every byte back, anything else 200 "ok". */
const ECHO_SCRIPT = [
  "#!/bin/sh",
  "read -r first",
  'upgrade=""',
  'while read -r line; do line=$(printf %s "$line" | tr -d "\\r"); [ -z "$line" ] && break; case "$line" in [Uu]pgrade:*) upgrade=1;; esac; done',
  'if [ -n "$upgrade" ]; then printf "HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n"; exec cat; fi',
  'printf "HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok"',
  ""
].join("\n")
let echoImage: string

let postgres: PostgresServer
let databaseUrl: string
let mirror: ImageMirror
const dirs = [tempDatabasePath("replica-a"), tempDatabasePath("replica-b"), tempDatabasePath("replica-c")]
const replicas: Array<ChildServer> = []

const replicaEnv = (): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  SLIPWAY_RUNTIME: "local",
  SLIPWAY_LEASE_MS: String(LEASE_MS),
  SLIPWAY_INTERNAL_TOKEN: TOKEN,
  SLIPWAY_SECRETS_KEY: SECRETS_KEY,
  SLIPWAY_DEPLOYMENT_POSTGRES_URL: postgres.url,
  SLIPWAY_PUBLIC_URL: PUBLIC_URL,
  SLIPWAY_DEPLOY_DRAIN_MS: "1000",
  SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS: "60000",
  LOG_LEVEL: "info",
  ...mirror.env
})

const spawnReplica = (index: number, env: Record<string, string> = {}) => spawnServer({ databasePath: dirs[index]!.path, env: { ...replicaEnv(), ...env } })

const sql = <R>(text: string, params: Array<unknown> = []) => queryDatabase<R>(databaseUrl, text, params)

/** The replica id (`host:pid:random`) a child runs as. */
const replicaIdOf = async (child: ChildServer): Promise<string> => {
  const rows = await sql<{ id: string }>("SELECT id FROM replicas WHERE id LIKE $1", [`%:${child.process.pid}:%`])
  expect(rows.length).toBe(1)
  return rows[0]!.id
}

const api = (child: ChildServer) => child.request

/** Sends an upgrade request on a raw connection and a line after the 101; answers what came back (the 101 and the echo, or the refusal). */
const upgradeRoundTrip = async (url: string, path: string, headers: Record<string, string>, upgrade = "websocket"): Promise<{ readonly head: string; readonly echoed: string }> => {
  const target = new URL(url)
  const socket = connect(Number(target.port), target.hostname)
  const received: Array<Buffer> = []
  socket.on("data", (chunk: Buffer) => received.push(chunk))
  const text = () => Buffer.concat(received).toString()
  const until = async (predicate: () => boolean) => {
    for (let i = 0; i < 200 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 25))
  }
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
      Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") +
      "\r\n"
  )
  await until(() => text().includes("\r\n\r\n"))
  const head = text()
  if (!head.startsWith("HTTP/1.1 101")) {
    socket.destroy()
    return { head, echoed: "" }
  }
  received.length = 0
  socket.write("ping through the replicas\n")
  await until(() => text().includes("ping through the replicas\n"))
  socket.destroy()
  return { head, echoed: text() }
}

/** Whether `ancestor` is `pid`'s parent, grandparent, … */
const descendsFrom = (pid: number, ancestor: number): boolean => {
  for (let current: number | undefined = pid, hops = 0; current !== undefined && current > 1 && hops < 64; hops++) {
    if (current === ancestor) return true
    current = parentPid(current)
  }
  return false
}

/**
 * What runs of a data directory's runtime: box cgroups (every box init and what it started is
 * in one), mounts of its boxes, loop devices backed by its files, processes naming the directory
 * (Redis, bridges). `current`: the pid of a server running on that directory now, whose own
 * processes (its registry, say) are not leftovers.
 */
const leftoversOf = (dir: string, current?: number) => {
  const root = join(dir, "runtime")
  const parent = cgroupParentFor(root)
  const mode = detectLimitsMode(parent)
  const cgroups = listCgroups(mode, parent)
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(`${root}/boxes`))
  const loops = execFileSync("losetup", ["-l", "-n", "-O", "BACK-FILE"], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim())
    .filter((file) => file.startsWith(root))
  // Named in its command line, or working in it (Redis retitles itself but runs in its directory).
  const processes = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim()
        const cwd = readlinkSync(`/proc/${pid}/cwd`)
        if (current !== undefined && descendsFrom(Number(pid), current)) return []
        return args.includes(dir) || cwd.startsWith(dir) ? [`${pid} ${args}`] : []
      } catch {
        return []
      }
    })
  return { cgroups, mounts, loops, processes }
}

/** Connects to a deployment's own database as its replicas do (its role, the password every replica derives). */
const withDeploymentDatabase = async <A>(deploymentId: string, use: (client: pg.Client) => Promise<A>): Promise<A> => {
  const admin = new URL(postgres.url)
  const ident = `slipway_${deploymentId.replace(/-/g, "_")}`
  const client = new pg.Client({ host: admin.hostname, port: Number(admin.port), user: ident, database: ident, password: derivedPassword(SECRETS_KEY, deploymentId) })
  await client.connect()
  try {
    return await use(client)
  } finally {
    await client.end()
  }
}

beforeAll(async () => {
  postgres = await startPostgres()
  databaseUrl = await postgres.createDatabase()
  mirror = await startImageMirror({ images: ["busybox", "http-ok"], setProcessEnv: false })
  // A deployment image answering both plain HTTP (its health check) and upgrades (then echoing bytes back).
  const layout = await buildTestImages()
  await runCommand(
    ["umoci", "config", "--image", `${layout}:busybox`, "--tag", "upgrade-echo", "--config.env", `ECHO_SCRIPT=${ECHO_SCRIPT}`, "--clear=config.cmd",
      "--config.cmd", "/bin/sh", "--config.cmd", "-c", "--config.cmd", 'printf "%s" "$ECHO_SCRIPT" > /tmp/echo.sh && chmod +x /tmp/echo.sh && exec nc -ll -p $PORT -e /tmp/echo.sh'],
    { timeoutMs: 60_000 }
  )
  echoImage = `${mirror.host}/slipway-test/upgrade-echo:1`
  await runCommand(["skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", "--dest-no-creds", `oci:${layout}:upgrade-echo`, `docker://${echoImage}`], { timeoutMs: 120_000 })
  // Started together: they race on the empty database's migrations and its secrets check value.
  replicas.push(...(await Promise.all([0, 1, 2].map((index) => spawnReplica(index)))))
}, 180_000)

// A failure shows what the replicas said.
afterEach((context) => {
  if (context.task.result?.state !== "fail") return
  replicas.forEach((replica, index) => console.log(`--- replica ${"ABC"[index]} (pid ${replica.process.pid}):\n${replica.output().split("\n").slice(-40).join("\n")}`))
})

afterAll(async () => {
  await Promise.all(replicas.map((replica) => stopChild(replica, "SIGTERM")))
  await mirror?.stop()
  await postgres?.stop()
  for (const dir of dirs) dir.remove()
}, 120_000)

/** A box made through `via` from the default image, ready. */
const createBox = async (via: ChildServer, name: string, body: Record<string, unknown> = {}) => {
  const created = await api(via)("POST", "/v2/sandboxes/boxes", { body: { name, wait_for_ready: true, timeout: 120, ...body } })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  expect(created.body.status, JSON.stringify(created.body)).toBe("ready")
  return created.body as { id: string; name: string; dataplane_url: string }
}

const exec = async (via: ChildServer, sandboxId: string, command: string) => {
  const answer = await fetch(`${via.url}/sandboxes/${sandboxId}/execute`, {
    method: "POST",
    headers: { "x-api-key": TEST_KEY, "content-type": "application/json" },
    body: JSON.stringify({ command, timeout: 30 })
  })
  return { status: answer.status, body: (await answer.json()) as any }
}

describe("three replicas with the local runtime on one database", () => {
  let box: { id: string; name: string }

  it("records each replica with its internal address and one secrets check value", async () => {
    const rows = await sql<{ id: string; internal_url: string; alive: boolean }>("SELECT id, internal_url, lease_until > now() AS alive FROM replicas ORDER BY id")
    expect(rows).toHaveLength(3)
    expect(rows.every((row) => row.alive)).toBe(true)
    expect(rows.map((row) => row.internal_url).sort()).toEqual(replicas.map((replica) => replica.url).sort())
    expect(await sql("SELECT name FROM cluster_settings")).toEqual([{ name: "secrets_check" }])
  })

  it("serves a box made through replica A through B and C: exec over HTTP and WebSocket, upload, download, a service URL (HTTP and an upgrade) and a download URL", async () => {
    const [a, b, c] = replicas as [ChildServer, ChildServer, ChildServer]
    box = await createBox(a, "on-a")
    expect((box as any).dataplane_url).toBe(`${PUBLIC_URL}/sandboxes/${box.id}`)
    expect((await sql<{ replica_id: string }>("SELECT replica_id FROM sandboxes WHERE id = $1", [box.id]))[0]!.replica_id).toBe(await replicaIdOf(a))

    for (const via of [b, c]) {
      const ran = await exec(via, box.id, "echo hello from $(hostname)")
      expect(ran, JSON.stringify(ran.body)).toMatchObject({ status: 200, body: { stdout: "hello from on-a\n", exit_code: 0 } })
    }

    // A command streaming over a WebSocket through B: frames as a direct client gets them.
    const socket = await openFrameSocket(`${b.url}/sandboxes/${box.id}`, TEST_KEY)
    socket.send({ type: "execute", command: "for i in 1 2 3; do echo line $i; sleep 0.1; done; exit 3", timeout_seconds: 30 })
    const exit = await socket.waitFor((frame: Frame) => frame.type === "exit" || frame.type === "error", 20_000)
    expect(exit).toMatchObject({ type: "exit", exit_code: 3 })
    expect(socket.frames[0]).toMatchObject({ type: "started" })
    expect(streamText(socket.frames, "stdout")).toBe("line 1\nline 2\nline 3\n")
    await socket.close()

    // 4 MiB up through B, down through C (whole and a range), byte for byte.
    const bytes = randomBytes(4 * 1024 * 1024)
    const form = new FormData()
    form.append("file", new Blob([bytes]), "blob.bin")
    const uploaded = await fetch(`${b.url}/sandboxes/${box.id}/upload?path=/tmp/blob.bin`, { method: "POST", headers: { "x-api-key": TEST_KEY }, body: form })
    expect(uploaded.status).toBe(200)
    expect(await uploaded.json()).toMatchObject({ path: "/tmp/blob.bin", written: bytes.length })
    const downloaded = await fetch(`${c.url}/sandboxes/${box.id}/download?path=/tmp/blob.bin`, { headers: { "x-api-key": TEST_KEY } })
    expect(downloaded.status).toBe(200)
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(bytes)).toBe(true)
    const range = await fetch(`${c.url}/sandboxes/${box.id}/download?path=/tmp/blob.bin`, { headers: { "x-api-key": TEST_KEY, range: "bytes=100-199" } })
    expect(range.status).toBe(206)
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true)

    // A service in the box (busybox httpd with a CGI that prints what the box receives), minted on C, reached through B.
    const cgi = new FormData()
    cgi.append("file", new Blob(['#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\n"\nenv\n']), "env")
    expect((await fetch(`${c.url}/sandboxes/${box.id}/upload?path=/tmp/www/cgi-bin/env`, { method: "POST", headers: { "x-api-key": TEST_KEY }, body: cgi })).status).toBe(200)
    const started = await exec(
      a,
      box.id,
      "echo hello-service > /tmp/www/index.html && chmod +x /tmp/www/cgi-bin/env && (setsid httpd -f -p 127.0.0.1:8080 -h /tmp/www </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo started"
    )
    expect(started.body.exit_code).toBe(0)
    const minted = await api(c)("POST", `/v2/sandboxes/boxes/${box.name}/service-url`, { body: { port: 8080 } })
    expect(minted.status).toBe(200)
    const servicePath = new URL(minted.body.service_url).pathname
    const service = await fetch(`${b.url}${servicePath}index.html`, { headers: { "x-langsmith-sandbox-service-token": minted.body.token } })
    expect(service.status).toBe(200)
    expect(await service.text()).toBe("hello-service\n")
    const seen = await fetch(`${b.url}${servicePath}cgi-bin/env`, { headers: { "x-langsmith-sandbox-service-token": minted.body.token } })
    const environment = await seen.text()
    expect(environment).toContain("HTTP_X_FORWARDED_PREFIX=")
    // The replicas' secret and their own header never reach the box.
    expect(environment).not.toContain(TOKEN)
    expect(environment).not.toMatch(/SLIPWAY/i)

    // An upgrade to a service in the box (any protocol: here a line echo), through B.
    const echo = new FormData()
    echo.append("file", new Blob([ECHO_SCRIPT]), "echo.sh")
    expect((await fetch(`${c.url}/sandboxes/${box.id}/upload?path=/tmp/echo.sh`, { method: "POST", headers: { "x-api-key": TEST_KEY }, body: echo })).status).toBe(200)
    expect((await exec(a, box.id, "chmod +x /tmp/echo.sh && (setsid nc -ll -p 8081 -e /tmp/echo.sh </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo ok")).body.exit_code).toBe(0)
    const echoUrl = await api(a)("POST", `/v2/sandboxes/boxes/${box.name}/service-url`, { body: { port: 8081 } })
    const tunnel = await upgradeRoundTrip(b.url, `${new URL(echoUrl.body.service_url).pathname}socket`, { "x-langsmith-sandbox-service-token": echoUrl.body.token }, "echo")
    expect(tunnel.head).toMatch(/^HTTP\/1.1 101/)
    expect(tunnel.echoed).toBe("ping through the replicas\n")

    // A download link minted on B, served through C without an API key.
    const link = await api(b)("POST", `/v2/sandboxes/boxes/${box.name}/download-url`, { body: { path: "/tmp/blob.bin" } })
    expect(link.status).toBe(200)
    const viaLink = await fetch(`${c.url}${new URL(link.body.download_url).pathname}`)
    expect(viaLink.status).toBe(200)
    expect(Buffer.from(await viaLink.arrayBuffer()).equals(bytes)).toBe(true)
  }, 240_000)

  it("refuses the internal headers without the shared secret: a client cannot pass for a replica", async () => {
    const [, b] = replicas as [ChildServer, ChildServer]
    for (const headers of [{ "x-slipway-forwarded-by": "someone" }, { "x-slipway-internal-token": "wrong-token-0123456789" }, { "x-slipway-internal-token": `${TOKEN}x`, "x-slipway-forwarded-by": "x" }]) {
      const answer = await fetch(`${b.url}/sandboxes/${box.id}/execute`, {
        method: "POST",
        headers: { "x-api-key": TEST_KEY, "content-type": "application/json", ...headers },
        body: JSON.stringify({ command: "echo no" })
      })
      expect(answer.status).toBe(403)
      expect(((await answer.json()) as { detail: string }).detail).toMatch(/SLIPWAY_INTERNAL_TOKEN/)
    }
    const nudge = await fetch(`${b.url}/internal/replicas/nudge?topic=boxes`, { method: "POST" })
    expect(nudge.status).toBe(404)
    const forged = await fetch(`${b.url}/internal/replicas/nudge?topic=boxes`, { method: "POST", headers: { "x-slipway-internal-token": "0123456789abcdef0123" } })
    expect(forged.status).toBe(403)
    const nudged = await fetch(`${b.url}/internal/replicas/nudge?topic=boxes`, { method: "POST", headers: { "x-slipway-internal-token": TOKEN } })
    expect(nudged.status).toBe(204)
  })

  it("runs a box on the replica whose disk holds its volume, whichever replica received the create", async () => {
    const [a, b, c] = replicas as [ChildServer, ChildServer, ChildServer]
    expect((await api(c)("POST", "/v2/sandboxes/volumes", { body: { name: "data-on-c", size: "256Mi" } })).status).toBe(201)
    const template = await api(a)("POST", "/v2/sandboxes/templates", {
      body: { name: "with-volume", image: "python:3.12-slim", resources: { cpu: "500m", memory: "256Mi", storage: "256Mi" }, volume_mounts: [{ volume_name: "data-on-c", mount_path: "/data" }] }
    })
    expect(template.status, JSON.stringify(template.body)).toBe(201)
    const pinned = await createBox(a, "pinned", { template_name: "with-volume" })
    expect((await sql<{ replica_id: string }>("SELECT replica_id FROM sandboxes WHERE id = $1", [pinned.id]))[0]!.replica_id).toBe(await replicaIdOf(c))
    const wrote = await exec(b, pinned.id, "echo kept > /data/file && cat /data/file")
    expect(wrote.body).toMatchObject({ stdout: "kept\n", exit_code: 0 })
  }, 180_000)

  let deployment: { id: string; name: string; revision: string }
  /** The deployment's logs as A answered them while it served. */
  let logsBefore: { build: Array<unknown>; deploy: Array<unknown> }
  /** A log endpoint of the deployment (asc, the first 1000 lines), through a replica. */
  const logsVia = async (via: ChildServer, path: string) => {
    const answer = await api(via)("POST", `/v1/projects/${deployment?.id ?? ""}${path}`, { body: { order: "asc", limit: 1000 } })
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    return answer.body as { logs: Array<unknown>; next_offset: string | null }
  }

  it("serves deployments rolled out on A through B and C, HTTP and WebSocket; the database is on the shared server", async () => {
    const [a, b, c] = replicas as [ChildServer, ChildServer, ChildServer]
    const created = await api(a)("POST", "/v2/deployments", {
      body: { name: "agent", source: "external_container", source_revision_config: { image_uri: mirror.images.httpOk } }
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.id as string
    const revision = await eventually(
      async () => {
        const revisions = await api(a)("GET", `/v2/deployments/${id}/revisions`)
        const latest = revisions.body.resources[0]
        if (latest.status === "DEPLOY_FAILED") throw new Error(`rollout failed: ${latest.status_message}`)
        return latest.status === "DEPLOYED" ? (latest.id as string) : undefined
      },
      120_000,
      250
    )
    deployment = { id, name: "agent", revision }
    expect((await sql<{ serving_replica: string }>("SELECT serving_replica FROM deployments WHERE id = $1", [id]))[0]!.serving_replica).toBe(await replicaIdOf(a))
    for (const via of [a, b, c]) {
      const answer = await eventually(async () => {
        const response = await fetch(`${via.url}/d/agent/ok`)
        return response.status === 200 ? response : undefined
      }, 10_000)
      expect(await answer.text()).toBe("ok")
    }
    // WebSocket upgrades through every replica to a deployment A serves.
    const echoing = await api(a)("POST", "/v2/deployments", { body: { name: "echo", source: "external_container", source_revision_config: { image_uri: echoImage } } })
    expect(echoing.status, JSON.stringify(echoing.body)).toBe(201)
    await eventually(async () => ((await fetch(`${a.url}/d/echo/ok`)).status === 200 ? true : undefined), 120_000, 250)
    for (const via of [a, b, c]) {
      const upgraded = await eventually(async () => {
        const result = await upgradeRoundTrip(via.url, "/d/echo/socket", {})
        return result.head.startsWith("HTTP/1.1 101") ? result : undefined
      }, 10_000, 100)
      expect(upgraded.echoed).toBe("ping through the replicas\n")
    }
    // Its build and deploy logs, written by A, read the same through every replica (they are in the database).
    const build = await logsVia(a, `/revisions/${revision}/build_logs`)
    expect(build.logs.length).toBeGreaterThan(0)
    const deploy = await logsVia(a, "/deploy_logs")
    expect(deploy.logs.length).toBeGreaterThan(0)
    for (const via of [b, c]) {
      expect(await logsVia(via, `/revisions/${revision}/build_logs`)).toEqual(build)
      // Later lines (health results) may have come since: what A answered is how it starts.
      expect((await logsVia(via, "/deploy_logs")).logs.slice(0, deploy.logs.length)).toEqual(deploy.logs)
    }
    logsBefore = { build: build.logs, deploy: deploy.logs }
    // A URL no deployment has is still Slipway's 404 on every replica.
    expect((await fetch(`${b.url}/d/nothing-here/ok`)).status).toBe(404)
    // Its database is on the shared server, with credentials every replica derives alike.
    await withDeploymentDatabase(id, (client) => client.query("CREATE TABLE kept (note text); INSERT INTO kept VALUES ('written while A served')"))
  }, 240_000)

  const leftovers = leftoversOf

  it("a replica killed with SIGKILL: its deployment serves again on another within the lease plus the image's start, with no new revision; its boxes are failed with the reason", async () => {
    const [a, b, c] = replicas as [ChildServer, ChildServer, ChildServer]
    const victim = await replicaIdOf(a)
    const revisionsBefore = await sql<{ n: number }>("SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1", [deployment.id])
    // Clients poll the deployment URL through B and C the whole time.
    const answers: Array<{ at: number; status: number; detail: string }> = []
    let polling = true
    // Four clients, two through B and two through C, each polling every 100 ms.
    const poller = Promise.all(
      [b, b, c, c].map(async (via) => {
        while (polling) {
          const at = Date.now()
          try {
            const response = await fetch(`${via.url}/d/agent/ok`, { signal: AbortSignal.timeout(5000) })
            const text = await response.text()
            answers.push({ at, status: response.status, detail: response.status === 200 ? "" : text })
          } catch (error) {
            answers.push({ at, status: 0, detail: String(error) })
          }
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })
    )
    await new Promise((resolve) => setTimeout(resolve, 500))
    const killedAt = Date.now()
    await stopChild(a, "SIGKILL")
    // What A left running is still there (the restart below must end it): boxes, and the deployment's Redis.
    const left = leftovers(dirs[0]!.dir)
    expect(left.cgroups.length).toBeGreaterThan(0)
    expect(left.processes.some((line) => line.includes("redis-server")), left.processes.join("\n")).toBe(true)

    const servedAgainAt = await eventually(
      async () => {
        const after = answers.filter((answer) => answer.at > killedAt).sort((x, y) => x.at - y.at)
        const failedOnce = after.findIndex((answer) => answer.status !== 200)
        if (failedOnce === -1) return undefined
        // Served again: every client's answers are 200 from some time on.
        const lastFailure = after.filter((answer) => answer.status !== 200).at(-1)!
        const back = after.find((answer) => answer.at > lastFailure.at && answer.status === 200)
        return back !== undefined && after.filter((answer) => answer.at > back.at).length >= 8 ? back.at : undefined
      },
      90_000,
      100
    )
    polling = false
    await poller
    const takeoverMs = servedAgainAt - killedAt
    console.log(`replicas: deployment URL served again ${takeoverMs} ms after the SIGKILL (lease ${LEASE_MS} ms)`)
    // The lease, a round to notice, and the image's start (pull from the registry, box, health).
    expect(takeoverMs).toBeLessThan(LEASE_MS + 30_000)
    // Meanwhile every failure said what happened, naming the replica (never a bare "retry shortly").
    for (const answer of answers.filter((answer) => answer.status !== 200 && answer.at > killedAt)) {
      expect(answer.status, answer.detail).toBeOneOf([502, 503])
      expect(answer.detail).toMatch(/replica/)
    }
    const [row] = await sql<{ serving_replica: string; active_revision_id: string }>("SELECT serving_replica, active_revision_id FROM deployments WHERE id = $1", [deployment.id])
    expect([await replicaIdOf(b), await replicaIdOf(c)]).toContain(row!.serving_replica)
    expect(row!.active_revision_id).toBe(deployment.revision)
    expect(await sql("SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1", [deployment.id])).toEqual(revisionsBefore)
    for (const via of [b, c]) expect((await fetch(`${via.url}/d/agent/ok`)).status).toBe(200)
    // What A logged is still read through the survivors.
    for (const via of [b, c]) {
      // (its build log goes on with the image pulled again where the revision runs now)
      expect((await logsVia(via, `/revisions/${deployment.revision}/build_logs`)).logs).toEqual(expect.arrayContaining(logsBefore.build))
      expect((await logsVia(via, "/deploy_logs")).logs).toEqual(expect.arrayContaining(logsBefore.deploy))
    }
    // The same database, the same credentials: what A's replicas wrote is there.
    expect((await withDeploymentDatabase(deployment.id, (client) => client.query("SELECT note FROM kept"))).rows).toEqual([{ note: "written while A served" }])

    // Its box: failed, with the reason; through a survivor, the dataplane says so too.
    const failed = await eventually(async () => {
      const answer = await api(b)("GET", `/v2/sandboxes/boxes/${box.name}`)
      return answer.body.status === "failed" ? answer.body : undefined
    }, 30_000)
    expect(failed.status_message).toContain("the replica that ran it stopped answering")
    expect(failed.status_message).toContain(victim)
  }, 240_000)

  it("the killed replica started again on its data directory ends what it left running: no box init, Redis, mount, loop device or cgroup of its previous life stays", async () => {
    const restarted = await spawnReplica(0)
    replicas[0] = restarted
    const left = await eventually(async () => {
      const found = leftovers(dirs[0]!.dir, restarted.process.pid)
      return found.cgroups.length + found.mounts.length + found.loops.length + found.processes.length === 0 ? found : undefined
    }, 60_000, 500).catch(() => leftovers(dirs[0]!.dir, restarted.process.pid))
    expect(left).toEqual({ cgroups: [], mounts: [], loops: [], processes: [] })
    // It serves again: through it, the deployment (on another replica) and the pinned box (on C).
    expect((await fetch(`${restarted.url}/d/agent/ok`)).status).toBe(200)
    const pinned = await api(restarted)("GET", "/v2/sandboxes/boxes/pinned")
    expect((await exec(restarted, pinned.body.id, "cat /data/file")).body).toMatchObject({ stdout: "kept\n" })
    // Its predecessor's record is gone (adopted).
    expect(await sql("SELECT count(*)::int AS n FROM replicas")).toEqual([{ n: 3 }])
  }, 120_000)

  it("grows and deletes a volume through replicas that do not hold it", async () => {
    const [a, b, c] = replicas as [ChildServer, ChildServer, ChildServer]
    const grown = await api(a)("PATCH", "/v2/sandboxes/volumes/data-on-c", { body: { size: "512Mi" } })
    expect(grown.status, JSON.stringify(grown.body)).toBe(200)
    const pinned = (await api(b)("GET", "/v2/sandboxes/boxes/pinned")).body
    const df = await exec(b, pinned.id, "df -m /data | tail -1")
    expect(Number(df.body.stdout.trim().split(/\s+/)[1])).toBeGreaterThan(400)
    const volume = (await sql<{ id: string }>("SELECT id FROM sandbox_volumes WHERE name = 'data-on-c'"))[0]!.id
    const onDisk = join(dirs[2]!.dir, "runtime", "volumes", volume)
    expect(existsSync(onDisk)).toBe(true)
    expect((await api(b)("DELETE", "/v2/sandboxes/boxes/pinned")).status).toBe(204)
    expect((await api(b)("DELETE", "/v2/sandboxes/templates/with-volume")).status).toBe(204)
    // The box's end on C (told by B) and the volume's on C (asked by A).
    await eventually(async () => ((await api(a)("DELETE", "/v2/sandboxes/volumes/data-on-c")).status === 204 ? true : undefined), 30_000, 250)
    await eventually(async () => (existsSync(onDisk) ? undefined : true), 20_000, 100)
    expect(c.process.exitCode).toBeNull()
  }, 120_000)

  it("refuses to start a replica whose secrets key cannot open the database's check value", async () => {
    const other = tempDatabasePath("replica-other-key")
    try {
      const refused = await spawnServer({ databasePath: other.path, env: { ...replicaEnv(), SLIPWAY_SECRETS_KEY: randomBytes(32).toString("hex") } }).then(
        (child) => {
          child.process.kill("SIGKILL")
          throw new Error("a replica with another secrets key started")
        },
        (error: Error) => error.message
      )
      expect(refused).toMatch(/secrets key cannot open the database's secrets check value/)
      expect(refused).toMatch(/Set the same SLIPWAY_SECRETS_KEY on every replica/)
      // Without the shared secret on PostgreSQL with the local runtime: refused before anything opens.
      const noToken = await spawnServer({ databasePath: other.path, env: { ...replicaEnv(), SLIPWAY_INTERNAL_TOKEN: "" } }).then(
        () => "started",
        (error: Error) => error.message
      )
      expect(noToken).toMatch(/exited early \(2\)[^]*SLIPWAY_INTERNAL_TOKEN is required on PostgreSQL/)
    } finally {
      other.remove()
    }
  }, 60_000)
})

describe("two replicas: a delete through one tears down on the other; a clean stop hands deployments over at once", () => {
  const pair: Array<ChildServer> = []
  const pairDirs = [tempDatabasePath("pair-a"), tempDatabasePath("pair-b")]
  let pairDatabase: string

  beforeAll(async () => {
    pairDatabase = await postgres.createDatabase()
    pair.push(...(await Promise.all(pairDirs.map((dir) => spawnServer({ databasePath: dir.path, env: { ...replicaEnv(), DATABASE_URL: pairDatabase } })))))
  }, 120_000)
  afterAll(async () => {
    await Promise.all(pair.map((replica) => stopChild(replica, "SIGTERM")))
    for (const dir of pairDirs) dir.remove()
  }, 120_000)

  const pairSql = <R>(text: string, params: Array<unknown> = []) => queryDatabase<R>(pairDatabase, text, params)

  const deployOn = async (via: ChildServer, name: string) => {
    const created = await via.request("POST", "/v2/deployments", { body: { name, source: "external_container", source_revision_config: { image_uri: mirror.images.httpOk } } })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    await eventually(
      async () => {
        const latest = (await via.request("GET", `/v2/deployments/${created.body.id}/revisions`)).body.resources[0]
        if (latest.status === "DEPLOY_FAILED") throw new Error(`rollout failed: ${latest.status_message}`)
        return latest.status === "DEPLOYED" ? true : undefined
      },
      120_000,
      250
    )
    return created.body.id as string
  }

  it("deleted through the replica that does not serve it: the serving one ends its replicas and Redis, and its database goes", async () => {
    const [first, second] = pair as [ChildServer, ChildServer]
    const id = await deployOn(first, "short-lived")
    expect((await eventually(async () => ((await fetch(`${second.url}/d/short-lived/ok`)).status === 200 ? true : undefined), 10_000))).toBe(true)
    const running = () => leftoversOf(pairDirs[0]!.dir)
    expect(running().cgroups.length).toBeGreaterThan(0)
    expect(running().processes.some((line) => line.includes("redis-server"))).toBe(true)
    expect((await second.request("DELETE", `/v2/deployments/${id}`)).status).toBeLessThan(300)
    await eventually(async () => {
      const left = running()
      return left.cgroups.length === 0 && left.processes.length === 0 ? true : undefined
    }, 30_000, 250)
    const ident = `slipway_${id.replace(/-/g, "_")}`
    expect(await queryDatabase(postgres.url, "SELECT 1 FROM pg_database WHERE datname = $1", [ident])).toEqual([])
    expect((await fetch(`${second.url}/d/short-lived/ok`)).status).toBe(404)
  }, 180_000)

  it("a replica stopped with SIGTERM gives its deployments up: the other serves them before the stopped one's lease would have expired", async () => {
    const [first, second] = pair as [ChildServer, ChildServer]
    const id = await deployOn(first, "handed-over")
    const firstId = (await pairSql<{ id: string }>("SELECT id FROM replicas WHERE id LIKE $1", [`%:${first.process.pid}:%`]))[0]!.id
    const stoppedAt = Date.now()
    first.process.kill("SIGTERM")
    const switched = await eventually(async () => {
      const [row] = await pairSql<{ serving_replica: string | null; first_lease_current: boolean }>(
        "SELECT d.serving_replica, (SELECT lease_until > now() FROM replicas WHERE id = $2) AS first_lease_current FROM deployments d WHERE d.id = $1",
        [id, firstId]
      )
      return row!.serving_replica !== null && row!.serving_replica !== firstId ? row : undefined
    }, 20_000, 50)
    // Handed over, not taken over: the stopped replica's lease still ran when the other took it.
    expect(switched.first_lease_current).toBe(true)
    await eventually(async () => ((await fetch(`${second.url}/d/handed-over/ok`)).status === 200 ? true : undefined), 60_000, 100)
    console.log(`replicas: after SIGTERM, served by the other replica again ${Date.now() - stoppedAt} ms later`)
    expect(await first.exited).toBe(0)
  }, 180_000)
})
