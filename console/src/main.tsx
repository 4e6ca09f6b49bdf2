/** The console's shell: sign-in, the tenant picker, navigation and a hash router (no server-side routes needed). */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { clearSession, loadSession, request, saveSession, type Session } from "./api.ts"
import { ErrorBox, useAction } from "./ui.tsx"
import { CreateDeployment, DeploymentList, DeploymentPage } from "./views/deployments.tsx"
import { BoxList, BoxPage, PoolList, TemplateList, VolumeList } from "./views/sandboxes.tsx"

const RECENT = "slipway.recentTenants"
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const recentTenants = (): Array<string> => {
  try {
    const list = JSON.parse(sessionStorage.getItem(RECENT) ?? "[]")
    return Array.isArray(list) ? list.filter((item) => typeof item === "string") : []
  } catch {
    return []
  }
}

const remember = (tenant: string) => {
  if (!tenant) return
  sessionStorage.setItem(RECENT, JSON.stringify([tenant, ...recentTenants().filter((item) => item !== tenant)].slice(0, 8)))
}

/** A key (and tenant) is accepted when the server lets it list deployments. */
const verify = async (session: Session) => {
  if (session.tenant && !uuid.test(session.tenant)) throw new Error("The tenant id must be a UUID (or left empty for the key's own tenant)")
  await request(session, "GET", "/v2/deployments?limit=1")
}

/** Verifies `session`, keeps it for this tab and remembers its tenant, then hands it to `then`. */
const enterSession = async (session: Session, then: (session: Session) => void) => {
  await verify(session)
  saveSession(session)
  remember(session.tenant)
  then(session)
}

const SignIn = ({ onSignedIn }: { onSignedIn: (session: Session) => void }) => {
  const [key, setKey] = useState("")
  const [tenant, setTenant] = useState("")
  const { error, busy, run: submit } = useAction(() => enterSession({ key: key.trim(), tenant: tenant.trim() }, onSignedIn), { stayBusy: true })
  return (
    <main class="signin">
      <form class="card form" id="signin" onSubmit={submit}>
        <h1>
          <img class="logo" src="/console/favicon.svg" alt="" /> Slipway
        </h1>
        <label>
          API key
          <input name="api_key" type="password" required autoComplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
          <small>Kept in this browser tab only (sessionStorage): closing the tab signs you out.</small>
        </label>
        <label>
          <span>
            Tenant id <span class="muted">(optional)</span>
          </span>
          <input name="tenant_id" autoComplete="off" placeholder="the key's own tenant" value={tenant} onInput={(e) => setTenant(e.currentTarget.value)} />
        </label>
        <ErrorBox error={error} signingIn />
        <button class="primary" type="submit" disabled={busy || key.trim() === ""}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  )
}

const TenantPicker = ({ session, onChange }: { session: Session; onChange: (session: Session) => void }) => {
  const [tenant, setTenant] = useState(session.tenant)
  const { error, run: submit } = useAction(() => enterSession({ key: session.key, tenant: tenant.trim() }, onChange))
  useEffect(() => setTenant(session.tenant), [session.tenant])
  return (
    <form class="tenant" id="tenant" onSubmit={submit}>
      <label>
        Tenant
        <input name="tenant_id" list="recent-tenants" placeholder="key's own tenant" value={tenant} onInput={(e) => setTenant(e.currentTarget.value)} />
      </label>
      <datalist id="recent-tenants">
        {recentTenants().map((item) => (
          <option value={item} />
        ))}
      </datalist>
      <button type="submit" class="small">
        Switch
      </button>
      {error !== null && (
        <div class="popover">
          <ErrorBox error={error} />
        </div>
      )}
    </form>
  )
}

const useHash = () => {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const update = () => setHash(location.hash)
    addEventListener("hashchange", update)
    return () => removeEventListener("hashchange", update)
  }, [])
  return hash.replace(/^#\/?/, "")
}

const nav = [
  ["deployments", "Deployments"],
  ["sandboxes", "Sandboxes"],
  ["templates", "Templates"],
  ["pools", "Pools"],
  ["volumes", "Volumes"]
] as const

const View = ({ session, route }: { session: Session; route: Array<string> }) => {
  const [area = "deployments", id] = route
  switch (area) {
    case "deployments":
      if (id === "new") return <CreateDeployment session={session} />
      return id ? <DeploymentPage session={session} id={id} /> : <DeploymentList session={session} />
    case "sandboxes":
      return id ? <BoxPage session={session} name={id} /> : <BoxList session={session} />
    case "templates":
      return <TemplateList session={session} />
    case "pools":
      return <PoolList session={session} />
    case "volumes":
      return <VolumeList session={session} />
    default:
      return <p class="empty">No such page. <a href="#/deployments">Deployments</a></p>
  }
}

const App = () => {
  const [session, setSession] = useState<Session | undefined>(loadSession)
  const path = useHash()
  const route = path.split("/").filter(Boolean).map(decodeURIComponent)
  if (!session) return <SignIn onSignedIn={setSession} />
  const area = route[0] ?? "deployments"
  return (
    <div class="app">
      <header class="top">
        <a class="brand" href="#/deployments">
          <img class="logo" src="/console/favicon.svg" alt="" /> Slipway
        </a>
        <TenantPicker session={session} onChange={setSession} />
        <button
          type="button"
          class="small"
          id="signout"
          onClick={() => {
            clearSession()
            setSession(undefined)
          }}
        >
          Sign out
        </button>
      </header>
      <nav class="side">
        {nav.map(([href, label]) => (
          <a href={`#/${href}`} class={area === href ? "current" : ""}>
            {label}
          </a>
        ))}
        <hr />
        <a href="/docs">API reference</a>
      </nav>
      <main class="content">
        {/* Keyed by tenant: switching tenants starts every view afresh. */}
        <View key={session.tenant} session={session} route={route} />
      </main>
    </div>
  )
}

render(<App />, document.getElementById("app")!)
