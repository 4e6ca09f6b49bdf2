/** Deployments: the list, the create form, and a deployment's page (revision timeline, logs, redeploy, delete). */
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, type Deployment, type LogEntry, listAll, request, type Revision, type Session } from "../api.ts"
import { Confirm, Empty, ErrorBox, Status, Time, useAction, usePoll } from "../ui.tsx"

const imageOf = (deployment: { source: string; source_revision_config: Revision["source_revision_config"] }) =>
  deployment.source === "external_container"
    ? (deployment.source_revision_config.image_uri ?? "")
    : [deployment.source_revision_config.repo_ref, deployment.source_revision_config.repo_commit_sha?.slice(0, 12)].filter(Boolean).join(" @ ")

const inProgress = new Set(["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING"])

export const DeploymentList = ({ session }: { session: Session }) => {
  const { value: all, error } = usePoll(() => listAll<Deployment>(session, "/v2/deployments", "resources"), 3000, [session])
  const [filter, setFilter] = useState("")
  const value = all?.filter((deployment) => deployment.name.includes(filter.trim().toLowerCase()))
  return (
    <section>
      <header class="page-head">
        <h2>Deployments</h2>
        <div class="actions">
          {all !== undefined && all.length > 0 && <input class="filter" aria-label="filter by name" placeholder="filter by name" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />}
          <a class="button primary" href="#/deployments/new">
            New deployment
          </a>
        </div>
      </header>
      <ErrorBox error={error} />
      {value === undefined ? (
        !error && <Empty>Loading…</Empty>
      ) : value.length === 0 ? (
        <Empty>{all!.length === 0 ? "No deployments yet. Create one, or deploy with the GitHub Action or the CLI." : "No deployment matches the filter."}</Empty>
      ) : (
        <table class="list" id="deployments">
          <thead>
            <tr>
              <th>Name</th>
              <th>Status</th>
              <th>Latest source</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {value.map((deployment) => (
              <tr data-name={deployment.name}>
                <td>
                  <a href={`#/deployments/${deployment.id}`}>{deployment.name}</a>
                </td>
                <td>
                  <Status value={deployment.status} />
                </td>
                <td class="mono">
                  <span class="muted">{deployment.source === "external_container" ? "image " : "git "}</span>
                  {imageOf(deployment)}
                  {deployment.active_revision_id && deployment.latest_revision_id && deployment.active_revision_id !== deployment.latest_revision_id && (
                    <span class="chip" title="The active revision is not the latest one (redeployed or still rolling out)">
                      active: older revision
                    </span>
                  )}
                </td>
                <td>
                  <Time iso={deployment.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

/** `NAME=value` per line; blank lines and `#` comments are skipped. */
const parseSecrets = (text: string): Array<{ name: string; value: string }> => {
  const secrets: Array<{ name: string; value: string }> = []
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim()
    if (line === "" || line.startsWith("#")) return
    const eq = line.indexOf("=")
    if (eq <= 0) throw new ApiError(0, [`secrets line ${index + 1}: write NAME=value`])
    secrets.push({ name: line.slice(0, eq).trim(), value: line.slice(eq + 1) })
  })
  return secrets
}

export const CreateDeployment = ({ session }: { session: Session }) => {
  const [name, setName] = useState("")
  const [image, setImage] = useState("")
  const [secrets, setSecrets] = useState("")
  const { error, busy, run: submit } = useAction(
    async () => {
      const parsed = parseSecrets(secrets)
      const created = await request<Deployment>(session, "POST", "/v2/deployments", {
        body: {
          name,
          source: "external_container",
          source_revision_config: { image_uri: image },
          ...(parsed.length > 0 ? { secrets: parsed } : {})
        }
      })
      location.hash = `#/deployments/${created.id}`
    },
    { stayBusy: true }
  )
  return (
    <section>
      <header class="page-head">
        <h2>New deployment</h2>
      </header>
      <form class="card form" id="create-deployment" onSubmit={submit}>
        <p class="muted">Deploys a container image that is already built (source <code>external_container</code>).</p>
        <label>
          Name
          <input name="name" required autoComplete="off" placeholder="my-agent" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <small>1–63 characters: lowercase letters, digits, “-” and “_”.</small>
        </label>
        <label>
          Image
          <input name="image_uri" autoComplete="off" placeholder="registry.example.com/acme/agent:1.0" value={image} onInput={(e) => setImage(e.currentTarget.value)} />
        </label>
        <label>
          <span>
            Secrets <span class="muted">(optional)</span>
          </span>
          <textarea name="secrets" rows={3} placeholder={"DATABASE_URL=postgres://…\nOPENAI_API_KEY=…"} value={secrets} onInput={(e) => setSecrets(e.currentTarget.value)} />
          <small>One NAME=value per line; values are write-only (shown masked afterwards).</small>
        </label>
        <ErrorBox error={error} />
        <div class="actions">
          <a class="button" href="#/deployments">
            Cancel
          </a>
          <button class="primary" type="submit" disabled={busy}>
            {busy ? "Creating…" : "Create deployment"}
          </button>
        </div>
      </form>
    </section>
  )
}

type Pending = { kind: "delete" } | { kind: "redeploy"; revision: Revision }

export const DeploymentPage = ({ session, id }: { session: Session; id: string }) => {
  const [fast, setFast] = useState(true)
  const { value, error, reload } = usePoll(
    async () => {
      const [deployment, revisions] = await Promise.all([
        request<Deployment>(session, "GET", `/v2/deployments/${id}`),
        listAll<Revision>(session, `/v2/deployments/${id}/revisions`, "resources")
      ])
      return { deployment, revisions }
    },
    fast ? 1000 : 4000,
    [session, id]
  )
  const [pending, setPending] = useState<Pending | null>(null)
  const [selected, setSelected] = useState<string | null>(null)
  useEffect(() => {
    if (value) setFast(value.deployment.status === "AWAITING_DELETE" || value.revisions.some((revision) => inProgress.has(revision.status)))
  }, [value])

  if (!value) {
    return (
      <section>
        <p>
          <a href="#/deployments">← Deployments</a>
        </p>
        <ErrorBox error={error} />
        {!error && <Empty>Loading…</Empty>}
      </section>
    )
  }
  const { deployment, revisions } = value
  const shownRevision = revisions.find((revision) => revision.id === selected) ?? revisions[0]
  const active = revisions.find((revision) => revision.id === deployment.active_revision_id)
  return (
    <section>
      <p>
        <a href="#/deployments">← Deployments</a>
      </p>
      <header class="page-head">
        <h2>
          {deployment.name} <Status value={deployment.status} />
        </h2>
        <button class="danger" type="button" onClick={() => setPending({ kind: "delete" })}>
          Delete…
        </button>
      </header>
      <ErrorBox error={error} />
      <dl class="card facts">
        <dt>Id</dt>
        <dd class="mono">{deployment.id}</dd>
        <dt>Running</dt>
        <dd class="mono">{active ? imageOf(active) : <span class="muted">nothing yet</span>}</dd>
        <dt>Latest source</dt>
        <dd class="mono">
          {deployment.source} {imageOf(deployment)}
        </dd>
        <dt>URL</dt>
        <dd>{deployment.source_config.custom_url ? <a href={deployment.source_config.custom_url}>{deployment.source_config.custom_url}</a> : <span class="muted">—</span>}</dd>
        <dt>Active revision</dt>
        <dd class="mono">{deployment.active_revision_id ?? <span class="muted">none yet</span>}</dd>
        <dt>Secrets</dt>
        <dd>{deployment.secrets.length > 0 ? deployment.secrets.map((secret) => secret.name).join(", ") : <span class="muted">none</span>}</dd>
        <dt>Updated</dt>
        <dd>
          <Time iso={deployment.updated_at} />
        </dd>
      </dl>
      {deployment.source === "external_container" && <NewImage session={session} deployment={deployment} onDone={reload} />}
      <div class="columns">
        <div>
          <h3>Revisions</h3>
          <ol class="timeline" id="revisions">
            {revisions.map((revision, index) => {
              const active = revision.id === deployment.active_revision_id
              return (
                <li class={`${active ? "active" : ""} ${revision.id === shownRevision?.id ? "selected" : ""}`} data-revision={revision.id} data-status={revision.status}>
                  <div class="row">
                    <Status value={revision.status} />
                    {active && <span class="badge ok outline">active</span>}
                    <span class="mono muted" title={revision.id}>
                      #{revisions.length - index} · {revision.id.slice(0, 8)}
                    </span>
                    <Time iso={revision.created_at} />
                  </div>
                  <div class="mono">{imageOf(revision)}</div>
                  {revision.status_message && <div class="message">{revision.status_message}</div>}
                  <div class="row">
                    <button type="button" class="small" onClick={() => setSelected(revision.id)}>
                      Logs
                    </button>
                    {!active && revision.status === "DEPLOYED" && (
                      <button type="button" class="small" onClick={() => setPending({ kind: "redeploy", revision })}>
                        Redeploy
                      </button>
                    )}
                  </div>
                </li>
              )
            })}
          </ol>
        </div>
        <div>
          {shownRevision && <Logs key={`build-${shownRevision.id}`} session={session} title={`Build log of revision ${shownRevision.id.slice(0, 8)}`} path={`/v1/projects/${deployment.id}/revisions/${shownRevision.id}/build_logs`} />}
          <Logs key={`deploy-${deployment.id}`} session={session} title="Runtime log (all revisions)" path={`/v1/projects/${deployment.id}/deploy_logs`} showRevision />
        </div>
      </div>
      {pending?.kind === "delete" && (
        <Confirm
          title={`Delete ${deployment.name}?`}
          action="Delete deployment"
          danger
          onCancel={() => setPending(null)}
          onConfirm={async () => {
            await request(session, "DELETE", `/v2/deployments/${deployment.id}`)
            location.hash = "#/deployments"
          }}
        >
          <p>Its revisions stop and its data is removed. This cannot be undone.</p>
        </Confirm>
      )}
      {pending?.kind === "redeploy" && (
        <Confirm
          title="Redeploy this revision?"
          action="Redeploy"
          onCancel={() => setPending(null)}
          onConfirm={async () => {
            await request(session, "POST", `/v2/deployments/${deployment.id}/revisions/${pending.revision.id}/redeploy`)
            setPending(null)
            reload()
          }}
        >
          <p>
            Revision <code>{pending.revision.id.slice(0, 8)}</code> (<code>{imageOf(pending.revision)}</code>) becomes the active revision again.
          </p>
        </Confirm>
      )}
    </section>
  )
}

const NewImage = ({ session, deployment, onDone }: { session: Session; deployment: Deployment; onDone: () => void }) => {
  const [image, setImage] = useState("")
  const { error, busy, run: submit } = useAction(async () => {
    await request(session, "PATCH", `/v2/deployments/${deployment.id}`, { body: { source_revision_config: { image_uri: image } } })
    setImage("")
    onDone()
  })
  return (
    <form class="card inline" id="new-image" onSubmit={submit}>
      <label>
        Deploy another image
        <input name="image_uri" autoComplete="off" placeholder={deployment.source_revision_config.image_uri ?? "registry/image:tag"} value={image} onInput={(e) => setImage(e.currentTarget.value)} />
      </label>
      <button class="primary" type="submit" disabled={busy || image === ""}>
        Deploy
      </button>
      <ErrorBox error={error} />
    </form>
  )
}

const MAX_LINES = 2000

/**
 * Follows a log endpoint: reads it in ascending order from the last `next_offset`, appending new
 * entries (deduplicated by id) every second. A 404 (no logs yet, or a server without the log
 * endpoints) shows "No logs yet" and keeps polling.
 */
const Logs = ({ session, title, path, showRevision }: { session: Session; title: string; path: string; showRevision?: boolean }) => {
  const [entries, setEntries] = useState<Array<LogEntry>>([])
  const [state, setState] = useState<"loading" | "none" | "ok">("loading")
  const [error, setError] = useState<unknown>(null)
  const [level, setLevel] = useState("")
  const [query, setQuery] = useState("")
  const box = useRef<HTMLPreElement>(null)
  const pinned = useRef(true)
  useEffect(() => {
    let stopped = false
    let offset: string | null = null
    let timer: ReturnType<typeof setTimeout> | undefined
    const seen = new Set<string>()
    setEntries([])
    setState("loading")
    const poll = async () => {
      let delay = 1000
      try {
        const answer: { logs: Array<LogEntry>; next_offset: string | null } = await request(session, "POST", path, {
          body: { order: "asc", limit: 500, offset, level: level || null, query: query || null }
        })
        if (stopped) return
        offset = answer.next_offset ?? offset
        const fresh = answer.logs.filter((entry) => !seen.has(entry.id))
        for (const entry of fresh) seen.add(entry.id)
        if (fresh.length > 0) setEntries((old) => [...old, ...fresh].slice(-MAX_LINES))
        setState((old) => (old === "ok" || fresh.length > 0 ? "ok" : "none"))
        setError(null)
        if (answer.logs.length >= 500) delay = 50
      } catch (cause) {
        if (stopped) return
        if (cause instanceof ApiError && cause.status === 404) {
          setState((old) => (old === "ok" ? old : "none"))
          delay = 3000
        } else {
          setError(cause)
          delay = 3000
        }
      }
      if (!stopped) timer = setTimeout(poll, document.hidden ? delay * 5 : delay)
    }
    void poll()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, [session, path, level, query])
  useEffect(() => {
    const element = box.current
    if (element && pinned.current) element.scrollTop = element.scrollHeight
  }, [entries])
  return (
    <div class="logs card">
      <div class="row">
        <h3>{title}</h3>
        <select aria-label="level" value={level} onChange={(e) => setLevel(e.currentTarget.value)}>
          <option value="">all levels</option>
          {["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"].map((name) => (
            <option value={name}>{name} and up</option>
          ))}
        </select>
        <input aria-label="filter" placeholder="filter" value={query} onChange={(e) => setQuery(e.currentTarget.value)} />
      </div>
      <ErrorBox error={error} />
      {state !== "ok" ? (
        <p class="empty">{state === "loading" ? "Loading…" : "No logs yet."}</p>
      ) : (
        <pre
          ref={box}
          class="log"
          onScroll={(e) => {
            const el = e.currentTarget
            pinned.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8
          }}
        >
          {entries.map((entry) => (
            <div class={`line lv-${entry.level.toLowerCase()} st-${entry.stream}`}>
              <span class="ts">{new Date(entry.timestamp).toISOString().slice(11, 23)}</span> <span class="lvl">{entry.level.padEnd(5)}</span>{" "}
              {showRevision && <span class="rev">{entry.revision_id.slice(0, 8)} </span>}
              {entry.message}
            </div>
          ))}
        </pre>
      )}
    </div>
  )
}
