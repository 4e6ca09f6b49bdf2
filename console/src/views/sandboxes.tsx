/** The sandbox area: boxes (and a box's page with its terminal), templates, pools and volumes. */
import { useEffect, useRef, useState } from "preact/hooks"
import { type ExecuteResult, execute, listAll, type Pool, request, type Sandbox, type Session, type Snapshot, type Template, type Volume } from "../api.ts"
import { Confirm, Empty, ErrorBox, formatBytes, quantityBytes, Status, Time, useAction, usePoll } from "../ui.tsx"

const base = "/v2/sandboxes"
const boxPath = (name: string) => `${base}/boxes/${encodeURIComponent(name)}`

/**
 * What a box was made from: its template; else its snapshot (by name once the snapshots are
 * loaded) and the image; else the image it runs (the server's default image).
 */
const BoxSource = ({ box, snapshots }: { box: Sandbox; snapshots: ReadonlyArray<Snapshot> | undefined }) => {
  if (box.template_name) return <span class="box-source">{box.template_name}</span>
  const image = box.image ? <span class="mono">{box.image}</span> : null
  if (box.snapshot_id) {
    const snapshot = snapshots?.find((s) => s.id === box.snapshot_id)
    return (
      <span class="box-source" title={box.snapshot_id}>
        snapshot {snapshot ? snapshot.name : <span class="mono">{box.snapshot_id.slice(0, 8)}</span>}
        {image && <span class="muted"> ({image})</span>}
      </span>
    )
  }
  return image ? <span class="box-source">image {image}</span> : <span class="muted">—</span>
}

/** The tenant's snapshots, to name the snapshot a box was made from (only fetched when some box has one). */
const useSnapshots = (session: Session, boxes: ReadonlyArray<Sandbox> | undefined) => {
  const needed = boxes?.some((box) => box.snapshot_id) ?? false
  return usePoll(() => (needed ? listAll<Snapshot>(session, `${base}/snapshots`, "snapshots") : Promise.resolve([])), 10000, [session, needed])
}

export const BoxList = ({ session }: { session: Session }) => {
  const boxes = usePoll(() => listAll<Sandbox>(session, `${base}/boxes`, "sandboxes"), 2000, [session])
  const templates = usePoll(() => listAll<Template>(session, `${base}/templates`, "templates"), 10000, [session])
  const snapshots = useSnapshots(session, boxes.value)
  return (
    <section>
      <header class="page-head">
        <h2>Sandboxes</h2>
      </header>
      <CreateBox session={session} templates={templates.value ?? []} onDone={boxes.reload} />
      <ErrorBox error={boxes.error} />
      {boxes.value === undefined ? (
        !boxes.error && <Empty>Loading…</Empty>
      ) : boxes.value.length === 0 ? (
        <Empty>No sandboxes.</Empty>
      ) : (
        <table class="list" id="boxes">
          <thead>
            <tr>
              <th>Name</th>
              <th>Status</th>
              <th>Made from</th>
              <th>Pool</th>
              <th>Terminal</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {boxes.value.map((box) => (
              <tr data-name={box.name}>
                <td>
                  <a href={`#/sandboxes/${encodeURIComponent(box.name)}`}>{box.name}</a>
                </td>
                <td>
                  <Status value={box.status} />
                  {box.status_message && <div class="message small">{box.status_message}</div>}
                </td>
                <td>
                  <BoxSource box={box} snapshots={snapshots.value} />
                </td>
                <td>{box.pool_name ?? <span class="muted">—</span>}</td>
                <td>{box.status === "failed" ? <span class="muted">none (failed)</span> : box.dataplane_url ? "available" : <span class="muted">not available</span>}</td>
                <td>
                  <Time iso={box.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

const CreateBox = ({ session, templates, onDone }: { session: Session; templates: ReadonlyArray<Template>; onDone: () => void }) => {
  const [template, setTemplate] = useState("")
  const [name, setName] = useState("")
  const { error, busy, run: submit } = useAction(async () => {
    await request(session, "POST", `${base}/boxes`, { body: { template_name: template || templates[0]?.name || "", ...(name ? { name } : {}) } })
    setName("")
    onDone()
  })
  return (
    <form class="card inline" id="create-box" onSubmit={submit}>
      <label>
        Template
        <select name="template_name" value={template} onChange={(e) => setTemplate(e.currentTarget.value)}>
          {templates.length === 0 && <option value="">no templates</option>}
          {templates.map((t) => (
            <option value={t.name}>{t.name}</option>
          ))}
        </select>
      </label>
      <label>
        <span>
          Name <span class="muted">(optional)</span>
        </span>
        <input name="name" autoComplete="off" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <button class="primary" type="submit" disabled={busy || templates.length === 0}>
        New sandbox
      </button>
      <ErrorBox error={error} />
    </form>
  )
}

export const BoxPage = ({ session, name }: { session: Session; name: string }) => {
  const { value: box, error, reload } = usePoll(() => request<Sandbox>(session, "GET", boxPath(name)), 2000, [session, name])
  const snapshots = useSnapshots(session, box ? [box] : undefined)
  const [confirming, setConfirming] = useState(false)
  const [actionError, setActionError] = useState<unknown>(null)
  const act = async (verb: "start" | "stop") => {
    setActionError(null)
    try {
      await request(session, "POST", `${boxPath(name)}/${verb}`)
      reload()
    } catch (cause) {
      setActionError(cause)
    }
  }
  return (
    <section>
      <p>
        <a href="#/sandboxes">← Sandboxes</a>
      </p>
      <ErrorBox error={error} />
      {box && (
        <>
          <header class="page-head">
            <h2>
              {box.name} <Status value={box.status} />
            </h2>
            <div class="actions">
              <button type="button" onClick={() => act("start")} disabled={box.status === "ready" || box.status === "provisioning"}>
                Start
              </button>
              <button type="button" onClick={() => act("stop")} disabled={box.status === "stopped"}>
                Stop
              </button>
              <button type="button" class="danger" onClick={() => setConfirming(true)}>
                Delete…
              </button>
            </div>
          </header>
          <ErrorBox error={actionError} />
          <dl class="card facts">
            <dt>Id</dt>
            <dd class="mono">{box.id}</dd>
            <dt>Made from</dt>
            <dd>
              <BoxSource box={box} snapshots={snapshots.value} />
            </dd>
            <dt>Pool</dt>
            <dd>{box.pool_name ?? <span class="muted">—</span>}</dd>
            <dt>Status message</dt>
            <dd>{box.status_message ?? <span class="muted">—</span>}</dd>
            <dt>Dataplane</dt>
            <dd class="mono">{box.dataplane_url ?? <span class="muted">none</span>}</dd>
            <dt>Created</dt>
            <dd>
              <Time iso={box.created_at} />
            </dd>
          </dl>
          <h3>Terminal</h3>
          {box.status === "failed" ? (
            <p class="notice" id="box-failed">
              This sandbox failed: <strong>{box.status_message ?? "no reason was given"}</strong>. It runs nothing, so it has no terminal, and it is not
              started again on its own: <em>Start</em> tries once more; or delete it, fix the cause (its image, its template) and create it again (the
              same name may be reused).
            </p>
          ) : box.dataplane_url ? (
            <Terminal session={session} dataplaneUrl={box.dataplane_url} />
          ) : (
            <p class="notice" id="no-dataplane">
              This server's sandbox runtime cannot execute commands: the sandbox has no dataplane (<code>dataplane_url</code> is null). Run the server with a runtime
              that executes (<code>SLIPWAY_RUNTIME=local</code>) to get a terminal here.
            </p>
          )}
          {confirming && (
            <Confirm
              title={`Delete sandbox ${box.name}?`}
              action="Delete sandbox"
              danger
              onCancel={() => setConfirming(false)}
              onConfirm={async () => {
                await request(session, "DELETE", boxPath(box.name))
                location.hash = "#/sandboxes"
              }}
            >
              <p>Its processes end and its files are removed.</p>
            </Confirm>
          )}
        </>
      )}
    </section>
  )
}

interface TerminalEntry {
  readonly command: string
  readonly result?: ExecuteResult
  readonly error?: unknown
}

/**
 * A line-oriented terminal over the dataplane's `POST /execute`: each command runs to completion
 * in a fresh shell, its stdout, stderr and exit code shown below it. Up/Down recall history.
 */
const Terminal = ({ session, dataplaneUrl }: { session: Session; dataplaneUrl: string }) => {
  const [entries, setEntries] = useState<Array<TerminalEntry>>([])
  const [line, setLine] = useState("")
  const [running, setRunning] = useState(false)
  const [shell, setShell] = useState("/bin/sh")
  const history = useRef<Array<string>>([])
  const cursor = useRef(0)
  const screen = useRef<HTMLDivElement>(null)
  const input = useRef<HTMLInputElement>(null)
  useEffect(() => {
    if (screen.current) screen.current.scrollTop = screen.current.scrollHeight
  }, [entries, running])
  const run = async (event: Event) => {
    event.preventDefault()
    const command = line.trim()
    if (command === "" || running) return
    if (command === "clear") {
      setEntries([])
      setLine("")
      return
    }
    history.current.push(command)
    cursor.current = history.current.length
    setLine("")
    setRunning(true)
    let entry: TerminalEntry
    try {
      entry = { command, result: await execute(session, dataplaneUrl, command, 60, shell) }
    } catch (error) {
      entry = { command, error }
    }
    setEntries((old) => [...old.slice(-199), entry])
    setRunning(false)
    input.current?.focus()
  }
  const recall = (event: KeyboardEvent) => {
    if (event.key !== "ArrowUp" && event.key !== "ArrowDown") return
    event.preventDefault()
    const list = history.current
    cursor.current = Math.max(0, Math.min(list.length, cursor.current + (event.key === "ArrowUp" ? -1 : 1)))
    setLine(list[cursor.current] ?? "")
  }
  return (
    <div class="terminal" id="terminal" onClick={() => input.current?.focus()}>
      <div class="screen" ref={screen}>
        <div class="muted">Commands run in {shell} through the box's dataplane; “clear” empties the screen.</div>
        {entries.map((entry) => (
          <div class="entry">
            <div class="cmd">
              <span class="prompt">$</span> {entry.command}
            </div>
            {entry.result && (
              <>
                {entry.result.stdout && <pre class="stdout">{entry.result.stdout}</pre>}
                {entry.result.stderr && <pre class="stderr">{entry.result.stderr}</pre>}
                {entry.result.exit_code !== 0 && <div class="exit">exit code {entry.result.exit_code}</div>}
              </>
            )}
            {entry.error !== undefined && <ErrorBox error={entry.error} />}
          </div>
        ))}
        {running && <div class="muted">running…</div>}
      </div>
      <form class="prompt-line" onSubmit={run}>
        <span class="prompt">$</span>
        <input ref={input} aria-label="command" autoComplete="off" spellcheck={false} value={line} disabled={running} onInput={(e) => setLine(e.currentTarget.value)} onKeyDown={recall} />
        <select aria-label="shell" value={shell} onChange={(e) => setShell(e.currentTarget.value)}>
          <option value="/bin/sh">sh</option>
          <option value="/bin/bash">bash</option>
        </select>
      </form>
    </div>
  )
}

export const TemplateList = ({ session }: { session: Session }) => {
  const { value, error } = usePoll(() => listAll<Template>(session, `${base}/templates`, "templates"), 5000, [session])
  return (
    <section>
      <header class="page-head">
        <h2>Templates</h2>
      </header>
      <ErrorBox error={error} />
      {value === undefined ? (
        !error && <Empty>Loading…</Empty>
      ) : value.length === 0 ? (
        <Empty>No templates.</Empty>
      ) : (
        <table class="list" id="templates">
          <thead>
            <tr>
              <th>Name</th>
              <th>Image</th>
              <th>CPU</th>
              <th>Memory</th>
              <th>Volumes</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {value.map((t) => (
              <tr data-name={t.name}>
                <td>{t.name}</td>
                <td class="mono">{t.image}</td>
                <td>{t.resources.cpu}</td>
                <td>{t.resources.memory}</td>
                <td>{t.volume_mounts.length > 0 ? t.volume_mounts.map((m) => `${m.volume_name} → ${m.mount_path}`).join(", ") : <span class="muted">—</span>}</td>
                <td>
                  <Time iso={t.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

export const PoolList = ({ session }: { session: Session }) => {
  const { value, error } = usePoll(
    async () => {
      const [pools, boxes] = await Promise.all([listAll<Pool>(session, `${base}/pools`, "pools"), listAll<Sandbox>(session, `${base}/boxes`, "sandboxes")])
      return { pools, boxes }
    },
    3000,
    [session]
  )
  return (
    <section>
      <header class="page-head">
        <h2>Pools</h2>
      </header>
      <ErrorBox error={error} />
      {value === undefined ? (
        !error && <Empty>Loading…</Empty>
      ) : value.pools.length === 0 ? (
        <Empty>No pools.</Empty>
      ) : (
        <table class="list" id="pools">
          <thead>
            <tr>
              <th>Name</th>
              <th>Template</th>
              <th>Replicas</th>
              <th>Sandboxes by status</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {value.pools.map((pool) => {
              const counts = new Map<string, number>()
              for (const box of value.boxes) if (box.pool_name === pool.name) counts.set(box.status, (counts.get(box.status) ?? 0) + 1)
              const ready = counts.get("ready") ?? 0
              return (
                <tr data-name={pool.name}>
                  <td>{pool.name}</td>
                  <td>{pool.template_name}</td>
                  <td>
                    <Status value={ready >= pool.replicas ? "READY" : "PROVISIONING"} /> {ready}/{pool.replicas} ready
                  </td>
                  <td>
                    {[...counts].map(([status, count]) => (
                      <span class="chip">
                        {status} {count}
                      </span>
                    ))}
                  </td>
                  <td>
                    <Time iso={pool.updated_at} />
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </section>
  )
}

export const VolumeList = ({ session }: { session: Session }) => {
  const { value, error } = usePoll(
    async () => {
      const [volumes, templates] = await Promise.all([listAll<Volume>(session, `${base}/volumes`, "volumes"), listAll<Template>(session, `${base}/templates`, "templates")])
      return { volumes, templates }
    },
    5000,
    [session]
  )
  const total = value ? value.volumes.reduce((sum, volume) => sum + quantityBytes(volume.size), 0) : 0
  return (
    <section>
      <header class="page-head">
        <h2>Volumes</h2>
      </header>
      <ErrorBox error={error} />
      {value === undefined ? (
        !error && <Empty>Loading…</Empty>
      ) : (
        <>
          <div class="card usage" id="volume-usage">
            <div>
              <strong>{formatBytes(total)}</strong> allocated in {value.volumes.length} volume{value.volumes.length === 1 ? "" : "s"} of this tenant.
            </div>
            <p class="muted small">
              The organization's storage quota is not exposed by the API, so it cannot be shown here; the server's operator sets it (<code>SLIPWAY_STORAGE_QUOTA</code>,
              default 100Gi, or per organization with <code>npm run keys</code>). A create or resize past it answers 429 with the limit and current usage.
            </p>
          </div>
          {value.volumes.length === 0 ? (
            <Empty>No volumes.</Empty>
          ) : (
            <table class="list" id="volumes">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Size</th>
                  <th>Share of total</th>
                  <th>Storage class</th>
                  <th>Mounted by</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {value.volumes.map((volume) => {
                  const bytes = quantityBytes(volume.size)
                  const share = total > 0 ? Math.round((bytes / total) * 100) : 0
                  const users = value.templates.filter((t) => t.volume_mounts.some((m) => m.volume_name === volume.name)).map((t) => t.name)
                  return (
                    <tr data-name={volume.name}>
                      <td>{volume.name}</td>
                      <td>
                        {volume.size} <span class="muted">({formatBytes(bytes)})</span>
                      </td>
                      <td>
                        <div class="bar" title={`${share}%`}>
                          <span style={{ width: `${share}%` }} />
                        </div>
                      </td>
                      <td>{volume.storage_class}</td>
                      <td>{users.length > 0 ? users.join(", ") : <span class="muted">unused</span>}</td>
                      <td>
                        <Time iso={volume.created_at} />
                      </td>
                    </tr>
                  )
                })}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  )
}
