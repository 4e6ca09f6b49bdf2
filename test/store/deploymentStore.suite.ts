/**
 * The `DeploymentStore` conformance suite: what every backend must do, run against each one
 * (`sqlite.test.ts`, and Postgres when configured). It speaks only the interface.
 */
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, type Layer, Result } from "effect"
import { supersededMessage } from "../../core/index.ts"
import { type DeploymentChange, type DeploymentRecord, DeploymentStore } from "../../server/store/DeploymentStore.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import { at, deploymentWithRevision, revisionFor, unique } from "./fixtures.ts"

/** A tenant of a new organization. */
const tenant = Effect.gen(function* () {
  const keys = yield* KeyStore
  const id = randomUUID()
  yield* keys.ensureTenant(id, randomUUID())
  return id
})

/** A stored deployment with its first revision (CREATING), in a new tenant. */
const storedDeployment = Effect.gen(function* () {
  const store = yield* DeploymentStore
  const tenantId = yield* tenant
  const { deployment, revision } = deploymentWithRevision(tenantId)
  yield* store.createDeployment(deployment, revision, randomUUID())
  return { store, tenantId, deployment, revision }
})

/** Two more revisions of it: one in progress (DEPLOYING), one finished (DEPLOYED). */
const laterRevisions = (deployment: DeploymentRecord) =>
  Effect.gen(function* () {
    const store = yield* DeploymentStore
    const deploying = revisionFor(deployment, 2, { status: "DEPLOYING" })
    const done = revisionFor(deployment, 3, { status: "DEPLOYED", deployed_at: at(3) })
    yield* store.insertRevision(deploying)
    yield* store.insertRevision(done)
    return { deploying, done }
  })

export const deploymentStoreSuite = (backend: string, stores: Layer.Layer<DeploymentStore | KeyStore, unknown>) =>
  layer(stores, { timeout: "60 seconds" })(`DeploymentStore (${backend})`, (it) => {
    it.effect("stores a deployment, its first revision and its tracing project, and reads back the same domain values", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        expect(yield* store.deployment(tenantId, deployment.id)).toEqual(deployment)
        const { secrets: _secrets, ...view } = revision
        expect(yield* store.revision(tenantId, deployment.id, revision.id)).toEqual(view)
        const projects = yield* store.listTracingProjects(tenantId, deployment.name, { limit: 10, offset: 0 })
        expect(projects.map((project) => [project.name, project.deployment_id])).toEqual([[deployment.name, deployment.id]])
      })
    )

    it.effect("refuses a second deployment of the same name in a tenant with Conflict, and allows it in another tenant", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const [first, second] = [yield* tenant, yield* tenant]
        const name = unique("same")
        const a = deploymentWithRevision(first, { name })
        yield* store.createDeployment(a.deployment, a.revision, randomUUID())
        const b = deploymentWithRevision(first, { name })
        const refused = yield* Effect.flip(store.createDeployment(b.deployment, b.revision, randomUUID()))
        expect(refused._tag).toBe("Conflict")
        expect(yield* store.deployment(first, b.deployment.id)).toBeUndefined()
        const c = deploymentWithRevision(second, { name })
        yield* store.createDeployment(c.deployment, c.revision, randomUUID())
        expect((yield* store.deployment(second, c.deployment.id))?.name).toBe(name)
      })
    )

    it.effect("answers another tenant's deployments and revisions as absent", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const [owner, stranger] = [yield* tenant, yield* tenant]
        const { deployment, revision } = deploymentWithRevision(owner)
        yield* store.createDeployment(deployment, revision, randomUUID())
        expect(yield* store.deployment(stranger, deployment.id)).toBeUndefined()
        expect(yield* store.revision(stranger, deployment.id, revision.id)).toBeUndefined()
        expect(yield* store.listDeployments(stranger, { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }, { limit: 100, offset: 0 })).toEqual([])
        expect(yield* store.setDeploymentStatus(stranger, deployment.id, "AWAITING_DELETE", at(9))).toBe(false)
        expect(yield* store.deleteDeployment(stranger, deployment.id)).toBe(false)
        expect((yield* store.deployment(owner, deployment.id))?.status).toBe("AWAITING_DATABASE")
      })
    )

    it.effect("rolls back every write of a transaction that fails, and keeps those of one that succeeds", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment } = yield* storedDeployment
        const second = revisionFor(deployment, 2)
        const failed = yield* Effect.flip(
          store.transaction(Effect.andThen(store.insertRevision(second), Effect.andThen(store.updateDeployment({ ...deployment, revision_seq: 2 }), Effect.fail("refused" as const))))
        )
        expect(failed).toBe("refused")
        expect(yield* store.revision(tenantId, deployment.id, second.id)).toBeUndefined()
        expect((yield* store.deployment(tenantId, deployment.id))?.revision_seq).toBe(1)
        yield* store.transaction(Effect.andThen(store.insertRevision(second), store.updateDeployment({ ...deployment, revision_seq: 2, latest_revision_id: second.id })))
        expect((yield* store.deployment(tenantId, deployment.id))?.latest_revision_id).toBe(second.id)
      })
    )

    it.effect("moves a revision only from the state the caller saw, and records deployed_at once", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        expect(yield* store.advanceRevision(tenantId, revision.id, "QUEUED", "AWAITING_DEPLOY", null, null, at(1))).toBe(false)
        expect(yield* store.advanceRevision(tenantId, revision.id, "CREATING", "QUEUED", null, null, at(1))).toBe(true)
        expect(yield* store.advanceRevision(tenantId, revision.id, "QUEUED", "DEPLOYED", "Deployed", at(2), at(2))).toBe(true)
        expect(yield* store.setRevisionStatus(tenantId, revision.id, "DEPLOYED", "again", at(5), at(5))).toBe(true)
        const stored = yield* store.revision(tenantId, deployment.id, revision.id)
        expect(stored).toMatchObject({ status: "DEPLOYED", status_message: "again", deployed_at: at(2), updated_at: at(5) })
      })
    )

    it.effect("lists unfinished revisions per deployment and across tenants, and pending deletes", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        const { deploying: second, done } = yield* laterRevisions(deployment)
        const unfinished = yield* store.unfinishedRevisions(tenantId, deployment.id)
        expect(new Set(unfinished.map((item) => item.id))).toEqual(new Set([revision.id, second.id]))
        const everywhere = (yield* store.inProgressRevisions()).map((item) => item.id)
        expect(everywhere).toEqual(expect.arrayContaining([revision.id, second.id]))
        expect(everywhere).not.toContain(done.id)
        yield* store.setDeploymentStatus(tenantId, deployment.id, "AWAITING_DELETE", at(7))
        expect((yield* store.pendingDeletes()).map((item) => item.id)).toContain(deployment.id)
      })
    )

    it.effect("supersedes unfinished revisions as the core says (pending: SKIPPED, in progress: INTERRUPTED), leaving finished ones", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        const { deploying, done } = yield* laterRevisions(deployment)
        // Another tenant cannot supersede them.
        expect(yield* store.supersedeUnfinished(yield* tenant, deployment.id, at(8))).toEqual([])
        const stopped = yield* store.supersedeUnfinished(tenantId, deployment.id, at(9))
        expect(new Set(stopped)).toEqual(new Set([revision.id, deploying.id]))
        const statusOf = (id: string) => Effect.map(store.revision(tenantId, deployment.id, id), (stored) => stored && [stored.status, stored.status_message, stored.updated_at])
        expect(yield* statusOf(revision.id)).toEqual(["SKIPPED", supersededMessage, at(9)])
        expect(yield* statusOf(deploying.id)).toEqual(["INTERRUPTED", supersededMessage, at(9)])
        expect(yield* statusOf(done.id)).toEqual(["DEPLOYED", null, at(3)])
        expect(yield* store.supersedeUnfinished(tenantId, deployment.id, at(10))).toEqual([])
      })
    )

    it.effect("adds a revision: supersedes the unfinished ones, inserts it and stores the deployment pointing at it", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        const second = revisionFor(deployment, 2, { source_revision_config: { image_uri: "ghcr.io/acme/agent:2" } })
        const pointing = { ...deployment, source_revision_config: second.source_revision_config, latest_revision_id: second.id, revision_seq: 2, updated_at: at(2) }
        expect(yield* store.addRevision(pointing, second)).toEqual([revision.id])
        expect(yield* store.deployment(tenantId, deployment.id)).toEqual(pointing)
        expect((yield* store.revision(tenantId, deployment.id, revision.id))?.status).toBe("SKIPPED")
        expect((yield* store.revision(tenantId, deployment.id, second.id))?.source_revision_config).toEqual({ image_uri: "ghcr.io/acme/agent:2" })
        expect(yield* store.revisionSecrets(tenantId, second.id)).toEqual(second.secrets)
      })
    )

    it.effect("changes a deployment by the caller's decision: absent, refused (nothing written), in place, or with a new revision", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        const seen: Array<DeploymentRecord> = []
        const decide =
          <C extends DeploymentChange>(change: (current: DeploymentRecord) => C) =>
          (current: DeploymentRecord): Result.Result<C, never> => (seen.push(current), Result.succeed(change(current)))

        // Another tenant's deployment is absent: the decision is never asked.
        expect(yield* store.changeDeployment(yield* tenant, deployment.id, decide((current) => ({ deployment: current })))).toBeUndefined()
        expect(seen).toEqual([])

        // A refusal comes back as is, and nothing is written.
        const refused = yield* Effect.flip(store.changeDeployment(tenantId, deployment.id, () => Result.fail("refused" as const)))
        expect(refused).toBe("refused")
        expect(yield* store.deployment(tenantId, deployment.id)).toEqual(deployment)

        // In place: the deployment alone; no revision is superseded.
        const renamed = yield* store.changeDeployment(tenantId, deployment.id, decide((current) => ({ deployment: { ...current, image_version: "2.0", updated_at: at(4) } })))
        expect(seen).toEqual([deployment])
        expect(renamed).toEqual({ deployment: { ...deployment, image_version: "2.0", updated_at: at(4) }, stopped: [] })
        expect(yield* store.deployment(tenantId, deployment.id)).toEqual(renamed?.deployment)
        expect((yield* store.revision(tenantId, deployment.id, revision.id))?.status).toBe("CREATING")

        // With a new revision: the unfinished one is superseded, and the caller's own fields come back.
        const next = revisionFor(deployment, 2)
        const changed = yield* store.changeDeployment(
          tenantId,
          deployment.id,
          decide((current) => ({ deployment: { ...current, latest_revision_id: next.id, revision_seq: 2 }, revision: next, note: "mine" }))
        )
        expect(changed).toEqual({ deployment: { ...renamed!.deployment, latest_revision_id: next.id, revision_seq: 2 }, revision: next, note: "mine", stopped: [revision.id] })
        expect((yield* store.deployment(tenantId, deployment.id))?.latest_revision_id).toBe(next.id)
        expect((yield* store.revision(tenantId, deployment.id, revision.id))?.status).toBe("SKIPPED")
      })
    )

    it.effect("rolls a change back with the transaction it joins", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        const next = revisionFor(deployment, 2)
        const failed = yield* Effect.flip(
          store.transaction(
            Effect.andThen(
              store.changeDeployment(tenantId, deployment.id, (current) => Result.succeed({ deployment: { ...current, latest_revision_id: next.id, revision_seq: 2 }, revision: next })),
              Effect.fail("later" as const)
            )
          )
        )
        expect(failed).toBe("later")
        expect(yield* store.deployment(tenantId, deployment.id)).toEqual(deployment)
        expect(yield* store.revision(tenantId, deployment.id, next.id)).toBeUndefined()
        expect((yield* store.revision(tenantId, deployment.id, revision.id))?.status).toBe("CREATING")
      })
    )

    it.effect("answers a revision's sealed secrets and every deployment's active revision", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment, revision } = yield* storedDeployment
        expect(yield* store.revisionSecrets(tenantId, revision.id)).toEqual(revision.secrets)
        expect(yield* store.revisionSecrets(tenantId, randomUUID())).toBeUndefined()
        const isActive = (items: ReadonlyArray<{ readonly deployment_id: string; readonly revision_id: string }>) =>
          items.some((item) => item.deployment_id === deployment.id && item.revision_id === revision.id)
        expect(isActive(yield* store.activeRevisions())).toBe(false)
        yield* store.setDeploymentState(tenantId, deployment.id, "READY", revision.id, at(4))
        expect(isActive(yield* store.activeRevisions())).toBe(true)
        yield* store.setDeploymentStatus(tenantId, deployment.id, "AWAITING_DELETE", at(5))
        expect(isActive(yield* store.activeRevisions())).toBe(false)
      })
    )

    it.effect("lists revisions newest first, filtered by status, in pages", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment } = yield* storedDeployment
        const more = [2, 3, 4].map((seq) => revisionFor(deployment, seq, { status: seq === 3 ? "DEPLOYED" : "SKIPPED" }))
        yield* Effect.forEach(more, (item) => store.insertRevision(item))
        const all = yield* store.listRevisions(tenantId, deployment.id, null, { limit: 10, offset: 0 })
        expect(all.map((item) => item.seq)).toEqual([4, 3, 2, 1])
        expect((yield* store.listRevisions(tenantId, deployment.id, null, { limit: 2, offset: 2 })).map((item) => item.seq)).toEqual([2, 1])
        expect((yield* store.listRevisions(tenantId, deployment.id, ["SKIPPED", "CREATING"], { limit: 10, offset: 0 })).map((item) => item.seq)).toEqual([4, 2, 1])
      })
    )

    it.effect("filters deployments by name (case-insensitive), status and ids, newest first", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const tenantId = yield* tenant
        const made = [0, 1, 2].map((index) => deploymentWithRevision(tenantId, { name: `shop-${index}-${randomUUID().slice(0, 8)}`, created_at: at(index), updated_at: at(index) }))
        yield* Effect.forEach(made, ({ deployment, revision }) => store.createDeployment(deployment, revision, randomUUID()))
        yield* store.setDeploymentStatus(tenantId, made[1]!.deployment.id, "READY", at(5))
        const none = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
        const names = (records: ReadonlyArray<{ name: string }>) => records.map((record) => record.name)
        expect(names(yield* store.listDeployments(tenantId, none, { limit: 10, offset: 0 }))).toEqual(made.map((item) => item.deployment.name).reverse())
        expect(names(yield* store.listDeployments(tenantId, { ...none, nameContains: "SHOP-1" }, { limit: 10, offset: 0 }))).toEqual([made[1]!.deployment.name])
        expect(names(yield* store.listDeployments(tenantId, { ...none, statuses: ["READY"] }, { limit: 10, offset: 0 }))).toEqual([made[1]!.deployment.name])
        expect(names(yield* store.listDeployments(tenantId, { ...none, ids: [made[0]!.deployment.id, made[2]!.deployment.id] }, { limit: 10, offset: 0 }))).toEqual([
          made[2]!.deployment.name,
          made[0]!.deployment.name
        ])
      })
    )

    it.effect("keeps listeners per tenant (compute_id unique per tenant) and names the deployments that use one", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const [tenantId, stranger] = [yield* tenant, yield* tenant]
        const listener = {
          id: randomUUID(),
          tenant_id: tenantId,
          compute_type: "k8s" as const,
          compute_id: unique("cluster"),
          version: "1.2.3",
          compute_config: { k8s_namespaces: ["prod", "dev"] },
          created_at: at(),
          updated_at: at()
        }
        yield* store.insertListener(listener)
        const twin = yield* Effect.flip(store.insertListener({ ...listener, id: randomUUID() }))
        expect(twin._tag).toBe("Conflict")
        yield* store.insertListener({ ...listener, id: randomUUID(), tenant_id: stranger })
        expect(yield* store.listener(tenantId, listener.id)).toEqual(listener)
        expect(yield* store.listener(stranger, listener.id)).toBeUndefined()
        const { deployment, revision } = deploymentWithRevision(tenantId, {
          source_config: { listener_id: listener.id, listener_config: { k8s_namespace: "prod" } }
        })
        yield* store.createDeployment(deployment, revision, randomUUID())
        expect(yield* store.listenerUsers(tenantId, listener.id)).toEqual([{ name: deployment.name, namespace: "prod" }])
        expect(yield* store.updateListener({ ...listener, compute_config: { k8s_namespaces: ["prod"] }, updated_at: at(1) })).toBe(true)
        expect((yield* store.listListeners(tenantId, { limit: 10, offset: 0 })).map((item) => item.compute_config)).toEqual([{ k8s_namespaces: ["prod"] }])
        expect(yield* store.deleteListener(stranger, listener.id)).toBe(false)
        expect(yield* store.deleteListener(tenantId, listener.id)).toBe(true)
        expect(yield* store.repositoriesOfIntegration(tenantId, randomUUID())).toEqual([])
      })
    )

    it.effect("finds integrations by tenant, by id and by owner across tenants", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const [a, b] = [yield* tenant, yield* tenant]
        const owner = unique("acme")
        const integration = (tenantId: string) => ({ id: randomUUID(), tenant_id: tenantId, provider: "github", owner, owner_key: owner, webhook_secret: "sealed", installed_at: at() })
        const first = integration(a)
        const second = integration(b)
        yield* store.insertIntegration(first)
        yield* store.insertIntegration(second)
        expect(yield* store.integrations(a)).toEqual([first])
        expect(yield* store.integration(b, first.id)).toBeUndefined()
        expect(new Set((yield* store.integrationsByOwner("github", owner)).map((item) => item.id))).toEqual(new Set([first.id, second.id]))
        expect(yield* store.integrationByOwner(a, "github", owner)).toEqual(first)
      })
    )

    it.effect("remembers a webhook delivery per integration until it expires, and prunes expired ones", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const tenantId = yield* tenant
        const integration = { id: randomUUID(), tenant_id: tenantId, provider: "github", owner: unique("o"), owner_key: unique("o"), webhook_secret: "sealed", installed_at: at() }
        const other = { ...integration, id: randomUUID(), owner: unique("p"), owner_key: unique("p") }
        yield* store.insertIntegration(integration)
        yield* store.insertIntegration(other)
        const delivery = randomUUID()
        const day = 24 * 60 * 60 * 1000
        expect(yield* store.rememberDelivery(integration.id, delivery, at(0), at(7 * day))).toBe(true)
        expect(yield* store.rememberDelivery(integration.id, delivery, at(1_000), at(7 * day + 1_000))).toBe(false)
        expect(yield* store.rememberDelivery(integration.id, delivery, at(7 * day - 1), at(14 * day))).toBe(false)
        // Another integration's deliveries are its own.
        expect(yield* store.rememberDelivery(other.id, delivery, at(1_000), at(7 * day))).toBe(true)
        // Once expired, the id is forgotten: it is pruned and may be received again.
        expect(yield* store.rememberDelivery(integration.id, delivery, at(7 * day), at(14 * day))).toBe(true)
        expect(yield* store.rememberDelivery(integration.id, randomUUID(), at(0), at(day))).toBe(true)
        expect(yield* store.pruneDeliveries(at(2 * day))).toBeGreaterThanOrEqual(1)
        expect(yield* store.rememberDelivery(integration.id, delivery, at(8 * day), at(15 * day))).toBe(false)
        // Removing the integration forgets its deliveries with it.
        expect(yield* store.deleteIntegration(tenantId, other.id)).toBe(true)
        expect(yield* store.deleteIntegration(tenantId, other.id)).toBe(false)
        expect(yield* store.integration(tenantId, other.id)).toBeUndefined()
      })
    )

    it.effect("removes an integration only in its own tenant", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const [owner, stranger] = [yield* tenant, yield* tenant]
        const integration = { id: randomUUID(), tenant_id: owner, provider: "github", owner: unique("r"), owner_key: unique("r"), webhook_secret: "sealed", installed_at: at() }
        yield* store.insertIntegration(integration)
        expect(yield* store.deleteIntegration(stranger, integration.id)).toBe(false)
        expect(yield* store.integration(owner, integration.id)).toEqual(integration)
        expect(yield* store.deleteIntegration(owner, integration.id)).toBe(true)
        expect(yield* store.integrationsByOwner("github", integration.owner_key)).toEqual([])
      })
    )

    it.effect("finds push targets only among the deployments bound to the signing integration, and knows which commits a deployment built", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const tenantId = yield* tenant
        const [bound, unbound] = [randomUUID(), randomUUID()]
        const gitrepo = (integrationId: string | null) =>
          deploymentWithRevision(tenantId, {
            source: "gitrepo",
            source_config: { integration_id: integrationId, repo_url: "https://github.com/acme/agent", build_on_push: true },
            source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" }
          })
        const mine = gitrepo(bound)
        const theirs = gitrepo(unbound)
        const none = gitrepo(null)
        for (const { deployment, revision } of [mine, theirs, none]) yield* store.createDeployment(deployment, revision, randomUUID())
        expect((yield* store.pushTargets(tenantId, bound, "refs/heads/main", "main")).map((record) => record.id)).toEqual([mine.deployment.id])
        expect((yield* store.pushTargets(tenantId, bound.toUpperCase(), "refs/heads/main", "main")).map((record) => record.id)).toEqual([mine.deployment.id])
        expect(yield* store.pushTargets(tenantId, bound, "refs/heads/dev", "dev")).toEqual([])

        const sha = "c0ffee".padEnd(40, "0")
        expect(yield* store.commitBuilt(tenantId, mine.deployment.id, sha, "main")).toBe(false)
        const built = revisionFor(mine.deployment, 2, {
          source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json", repo_commit_sha: sha },
          status: "BUILD_FAILED"
        })
        yield* store.insertRevision(built)
        // Whatever became of that revision, the commit was built for that ref.
        expect(yield* store.commitBuilt(tenantId, mine.deployment.id, sha, "main")).toBe(true)
        expect(yield* store.commitBuilt(tenantId, mine.deployment.id, sha, "dev")).toBe(false)
        expect(yield* store.commitBuilt(tenantId, theirs.deployment.id, sha, "main")).toBe(false)
        const stranger = yield* tenant
        expect(yield* store.commitBuilt(stranger, mine.deployment.id, sha, "main")).toBe(false)
      })
    )

    it.effect("answers an empty page for any offset past the end, however large", () =>
      Effect.gen(function* () {
        const { store, tenantId, deployment } = yield* storedDeployment
        const filter = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
        for (const offset of [5_000, 2 ** 53 + 2, 9.2e18, 2 ** 63, 2 ** 64, 1e300]) {
          const page = { limit: 10, offset }
          expect(yield* store.listDeployments(tenantId, filter, page)).toEqual([])
          expect(yield* store.listRevisions(tenantId, deployment.id, null, page)).toEqual([])
          expect(yield* store.listTracingProjects(tenantId, null, page)).toEqual([])
          expect(yield* store.listListeners(tenantId, page)).toEqual([])
        }
      })
    )

    it.effect("reseals every stored sealed value in one transaction, and rolls all of it back when one fails", () =>
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const tenantId = yield* tenant
        const { deployment, revision } = deploymentWithRevision(tenantId, { secrets: [{ name: "A", value: "sealed-a" }, { name: "B", value: "sealed-b" }] })
        yield* store.createDeployment(deployment, { ...revision, secrets: deployment.secrets }, randomUUID())
        const integration = { id: randomUUID(), tenant_id: tenantId, provider: "github", owner: unique("s"), owner_key: unique("s"), webhook_secret: "sealed-w", installed_at: at() }
        yield* store.insertIntegration(integration)

        // The store holds other tests' values too: a failing reseal must leave every one as it was.
        const refused = yield* Effect.flip(
          store.resealSecrets((stored) => {
            if (stored === "sealed-w") throw new Error("cannot open")
            return `re:${stored}`
          })
        )
        expect(refused._tag).toBe("StoreError")
        expect((yield* store.deployment(tenantId, deployment.id))?.secrets).toEqual(deployment.secrets)
        expect((yield* store.integration(tenantId, integration.id))?.webhook_secret).toBe("sealed-w")

        const counts = yield* store.resealSecrets((stored) => `re:${stored}`)
        expect(counts.secretValues).toBeGreaterThanOrEqual(4)
        expect(counts.webhookSecrets).toBeGreaterThanOrEqual(1)
        expect((yield* store.deployment(tenantId, deployment.id))?.secrets).toEqual([{ name: "A", value: "re:sealed-a" }, { name: "B", value: "re:sealed-b" }])
        expect((yield* store.integration(tenantId, integration.id))?.webhook_secret).toBe("re:sealed-w")
      })
    )
  })
