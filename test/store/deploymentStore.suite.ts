/**
 * The `DeploymentStore` conformance suite: what every backend must do, run against each one
 * (`sqlite.test.ts`, and Postgres when configured). It speaks only the interface.
 */
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, type Layer, Result } from "effect"
import { type RevisionStatus, supersededMessage } from "../../core/index.ts"
import type { DeploymentChange, DeploymentRecord } from "../../server/store/DeploymentStore.ts"
import type { Stores } from "../../server/store/index.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import type { NewRevision, RevisionRecord } from "../../server/store/RevisionStore.ts"
import { allStores, at, deploymentWithRevision, revisionFor, unique } from "./fixtures.ts"

/** A tenant of a new organization. */
const tenant = Effect.gen(function* () {
  const keys = yield* KeyStore
  const id = randomUUID()
  yield* keys.ensureTenant(id, randomUUID())
  return id
})

/** A stored deployment with its first revision (CREATING), in a new tenant; and the stores. */
const storedDeployment = Effect.gen(function* () {
  const stores = yield* allStores
  const tenantId = yield* tenant
  const { deployment, revision } = deploymentWithRevision(tenantId)
  yield* stores.deploymentStore.createDeployment(deployment, revision, randomUUID())
  return { ...stores, tenantId, deployment, revision }
})

/** Moves a revision on from the state it is in, as the controller does with a driver's report. */
const advance = <R extends RevisionRecord>(revision: R, to: RevisionStatus, when: string) =>
  Effect.gen(function* () {
    const { revisionStore } = yield* allStores
    expect(yield* revisionStore.advanceRevision(revision.tenant_id, revision.id, revision.status, to, null, to === "DEPLOYED" ? when : null, when)).toBe(true)
    return { ...revision, status: to, updated_at: when, deployed_at: revision.deployed_at ?? (to === "DEPLOYED" ? when : null) }
  })

/** The deployment's next revision, added as the server adds one (superseding the unfinished ones). */
const addRevision = (deployment: DeploymentRecord, overrides: Partial<NewRevision> = {}) =>
  Effect.gen(function* () {
    const { deploymentStore } = yield* allStores
    const revision = revisionFor(deployment, deployment.revision_seq + 1, overrides)
    const pointing = { ...deployment, latest_revision_id: revision.id, revision_seq: revision.seq }
    const stopped = yield* deploymentStore.addRevision(pointing, revision)
    return { deployment: pointing, revision, stopped }
  })

/** The first revision (CREATING) of a stored deployment, then finished (DEPLOYED), and a later one in progress (DEPLOYING). */
const laterRevisions = (deployment: DeploymentRecord, first: NewRevision) =>
  Effect.gen(function* () {
    const done = yield* advance(first, "DEPLOYED", at(3))
    const second = yield* addRevision(deployment)
    const deploying = yield* advance(second.revision, "DEPLOYING", at(4))
    return { deploying, done }
  })

export const deploymentStoreSuite = (backend: string, stores: Layer.Layer<Stores, unknown>) =>
  layer(stores, { timeout: "60 seconds" })(`DeploymentStore (${backend})`, (it) => {
    it.effect("stores a deployment, its first revision and its tracing project, and reads back the same domain values", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(deployment)
        const { secrets: _secrets, ...view } = revision
        expect(yield* revisionStore.revision(tenantId, deployment.id, revision.id)).toEqual(view)
        const projects = yield* deploymentStore.listTracingProjects(tenantId, deployment.name, { limit: 10, offset: 0 })
        expect(projects.map((project) => [project.name, project.deployment_id])).toEqual([[deployment.name, deployment.id]])
      })
    )

    it.effect("stores a deployment without a revision (one that waits for its first image or tarball); its first revision comes by addRevision", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore } = yield* allStores
        const tenantId = yield* tenant
        const { deployment: draft } = deploymentWithRevision(tenantId, { source: "internal_docker" })
        const deployment = { ...draft, latest_revision_id: null, revision_seq: 0 }
        yield* deploymentStore.createDeployment(deployment, undefined, randomUUID())
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(deployment)
        expect(yield* revisionStore.listRevisions(tenantId, deployment.id, null, { limit: 10, offset: 0 })).toEqual([])
        expect((yield* deploymentStore.listTracingProjects(tenantId, deployment.name, { limit: 10, offset: 0 })).map((project) => project.deployment_id)).toEqual([deployment.id])
        const { revision, stopped } = yield* addRevision(deployment)
        expect(stopped).toEqual([])
        expect(revision.seq).toBe(1)
        expect((yield* deploymentStore.deployment(tenantId, deployment.id))?.latest_revision_id).toBe(revision.id)
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.source).toBe("internal_docker")
      })
    )

    it.effect("refuses a second deployment of the same name in a tenant with Conflict, and allows it in another tenant", () =>
      Effect.gen(function* () {
        const { deploymentStore } = yield* allStores
        const [first, second] = [yield* tenant, yield* tenant]
        const name = unique("same")
        const a = deploymentWithRevision(first, { name })
        yield* deploymentStore.createDeployment(a.deployment, a.revision, randomUUID())
        const b = deploymentWithRevision(first, { name })
        const refused = yield* Effect.flip(deploymentStore.createDeployment(b.deployment, b.revision, randomUUID()))
        expect(refused._tag).toBe("Conflict")
        expect(yield* deploymentStore.deployment(first, b.deployment.id)).toBeUndefined()
        const c = deploymentWithRevision(second, { name })
        yield* deploymentStore.createDeployment(c.deployment, c.revision, randomUUID())
        expect((yield* deploymentStore.deployment(second, c.deployment.id))?.name).toBe(name)
      })
    )

    it.effect("answers another tenant's deployments and revisions as absent", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore } = yield* allStores
        const [owner, stranger] = [yield* tenant, yield* tenant]
        const { deployment, revision } = deploymentWithRevision(owner)
        yield* deploymentStore.createDeployment(deployment, revision, randomUUID())
        expect(yield* deploymentStore.deployment(stranger, deployment.id)).toBeUndefined()
        expect(yield* revisionStore.revision(stranger, deployment.id, revision.id)).toBeUndefined()
        expect(yield* deploymentStore.listDeployments(stranger, { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }, { limit: 100, offset: 0 })).toEqual([])
        expect(yield* deploymentStore.setDeploymentStatus(stranger, deployment.id, "AWAITING_DELETE", at(9))).toBe(false)
        expect(yield* deploymentStore.deleteDeployment(stranger, deployment.id)).toBe(false)
        expect((yield* deploymentStore.deployment(owner, deployment.id))?.status).toBe("AWAITING_DATABASE")
      })
    )

    it.effect("rolls back every write of a transaction that fails, and keeps those of one that succeeds", () =>
      Effect.gen(function* () {
        const { transaction, deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const second = revisionFor(deployment, 2)
        const pointing = { ...deployment, revision_seq: 2, latest_revision_id: second.id }
        const failed = yield* Effect.flip(
          transaction(
            Effect.andThen(
              deploymentStore.addRevision(pointing, second),
              Effect.andThen(deploymentStore.setDeploymentStatus(tenantId, deployment.id, "READY", at(5)), Effect.fail("refused" as const))
            )
          )
        )
        expect(failed).toBe("refused")
        expect(yield* revisionStore.revision(tenantId, deployment.id, second.id)).toBeUndefined()
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.status).toBe("CREATING")
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(deployment)
        yield* transaction(Effect.andThen(deploymentStore.addRevision(pointing, second), deploymentStore.setDeploymentStatus(tenantId, deployment.id, "READY", at(5))))
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toMatchObject({ latest_revision_id: second.id, status: "READY" })
      })
    )

    it.effect("moves a revision only from the state the caller saw, and records deployed_at once", () =>
      Effect.gen(function* () {
        const { revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        expect(yield* revisionStore.advanceRevision(tenantId, revision.id, "QUEUED", "AWAITING_DEPLOY", null, null, at(1))).toBe(false)
        expect(yield* revisionStore.advanceRevision(tenantId, revision.id, "CREATING", "QUEUED", null, null, at(1))).toBe(true)
        expect(yield* revisionStore.advanceRevision(tenantId, revision.id, "QUEUED", "DEPLOYED", "Deployed", at(2), at(2))).toBe(true)
        // A later move keeps the first deployed_at.
        expect(yield* revisionStore.advanceRevision(tenantId, revision.id, "DEPLOYED", "DEPLOYED", "again", at(5), at(5))).toBe(true)
        const stored = yield* revisionStore.revision(tenantId, deployment.id, revision.id)
        expect(stored).toMatchObject({ status: "DEPLOYED", status_message: "again", deployed_at: at(2), updated_at: at(5) })
      })
    )

    it.effect("lists unfinished revisions across tenants, and pending deletes", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const { deploying, done } = yield* laterRevisions(deployment, revision)
        const other = yield* storedDeployment
        const everywhere = (yield* revisionStore.inProgressRevisions()).map((item) => item.id)
        expect(everywhere).toEqual(expect.arrayContaining([deploying.id, other.revision.id]))
        expect(everywhere).not.toContain(done.id)
        yield* deploymentStore.setDeploymentStatus(tenantId, deployment.id, "AWAITING_DELETE", at(7))
        expect((yield* deploymentStore.pendingDeletes()).map((item) => item.id)).toContain(deployment.id)
      })
    )

    it.effect("supersedes unfinished revisions as the core says (pending: SKIPPED, in progress: INTERRUPTED), leaving finished ones", () =>
      Effect.gen(function* () {
        const { revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const { deploying, done } = yield* laterRevisions(deployment, revision)
        const pending = yield* storedDeployment
        // Another tenant cannot supersede them.
        expect(yield* revisionStore.supersedeUnfinished(yield* tenant, deployment.id, at(8))).toEqual([])
        expect(yield* revisionStore.supersedeUnfinished(tenantId, deployment.id, at(9))).toEqual([deploying.id])
        expect(yield* revisionStore.supersedeUnfinished(pending.tenantId, pending.deployment.id, at(9))).toEqual([pending.revision.id])
        const statusOf = (id: string) => Effect.map(revisionStore.revision(tenantId, deployment.id, id), (stored) => stored && [stored.status, stored.status_message, stored.updated_at])
        expect(yield* statusOf(deploying.id)).toEqual(["INTERRUPTED", supersededMessage, at(9)])
        expect(yield* statusOf(done.id)).toEqual(["DEPLOYED", null, at(3)])
        expect((yield* revisionStore.revision(pending.tenantId, pending.deployment.id, pending.revision.id))).toMatchObject({ status: "SKIPPED", status_message: supersededMessage, updated_at: at(9) })
        expect(yield* revisionStore.supersedeUnfinished(tenantId, deployment.id, at(10))).toEqual([])
      })
    )

    it.effect("adds a revision: supersedes the unfinished ones, inserts it and stores the deployment pointing at it", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const second = revisionFor(deployment, 2, { source_revision_config: { image_uri: "ghcr.io/acme/agent:2" } })
        const pointing = { ...deployment, source_revision_config: second.source_revision_config, latest_revision_id: second.id, revision_seq: 2, updated_at: at(2) }
        expect(yield* deploymentStore.addRevision(pointing, second)).toEqual([revision.id])
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(pointing)
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.status).toBe("SKIPPED")
        expect((yield* revisionStore.revision(tenantId, deployment.id, second.id))?.source_revision_config).toEqual({ image_uri: "ghcr.io/acme/agent:2" })
        expect(yield* revisionStore.revisionSecrets(tenantId, second.id)).toEqual(second.secrets)
      })
    )

    it.effect("changes a deployment by the caller's decision: absent, refused (nothing written), in place, or with a new revision", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const seen: Array<DeploymentRecord> = []
        const decide =
          <C extends DeploymentChange>(change: (current: DeploymentRecord) => C) =>
          (current: DeploymentRecord): Result.Result<C, never> => (seen.push(current), Result.succeed(change(current)))

        // Another tenant's deployment is absent: the decision is never asked.
        expect(yield* deploymentStore.changeDeployment(yield* tenant, deployment.id, decide((current) => ({ deployment: current })))).toBeUndefined()
        expect(seen).toEqual([])

        // A refusal comes back as is, and nothing is written.
        const refused = yield* Effect.flip(deploymentStore.changeDeployment(tenantId, deployment.id, () => Result.fail("refused" as const)))
        expect(refused).toBe("refused")
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(deployment)

        // In place: the deployment alone; no revision is superseded.
        const renamed = yield* deploymentStore.changeDeployment(tenantId, deployment.id, decide((current) => ({ deployment: { ...current, image_version: "2.0", updated_at: at(4) } })))
        expect(seen).toEqual([deployment])
        expect(renamed).toEqual({ deployment: { ...deployment, image_version: "2.0", updated_at: at(4) }, stopped: [] })
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(renamed?.deployment)
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.status).toBe("CREATING")

        // With a new revision: the unfinished one is superseded, and the caller's own fields come back.
        const next = revisionFor(deployment, 2)
        const changed = yield* deploymentStore.changeDeployment(
          tenantId,
          deployment.id,
          decide((current) => ({ deployment: { ...current, latest_revision_id: next.id, revision_seq: 2 }, revision: next, note: "mine" }))
        )
        expect(changed).toEqual({ deployment: { ...renamed!.deployment, latest_revision_id: next.id, revision_seq: 2 }, revision: next, note: "mine", stopped: [revision.id] })
        expect((yield* deploymentStore.deployment(tenantId, deployment.id))?.latest_revision_id).toBe(next.id)
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.status).toBe("SKIPPED")
      })
    )

    it.effect("rolls a change back with the transaction it joins", () =>
      Effect.gen(function* () {
        const { transaction, deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const next = revisionFor(deployment, 2)
        const failed = yield* Effect.flip(
          transaction(
            Effect.andThen(
              deploymentStore.changeDeployment(tenantId, deployment.id, (current) => Result.succeed({ deployment: { ...current, latest_revision_id: next.id, revision_seq: 2 }, revision: next })),
              Effect.fail("later" as const)
            )
          )
        )
        expect(failed).toBe("later")
        expect(yield* deploymentStore.deployment(tenantId, deployment.id)).toEqual(deployment)
        expect(yield* revisionStore.revision(tenantId, deployment.id, next.id)).toBeUndefined()
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.status).toBe("CREATING")
      })
    )

    it.effect("answers a revision's sealed secrets and every deployment's active revision", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        expect(yield* revisionStore.revisionSecrets(tenantId, revision.id)).toEqual(revision.secrets)
        expect(yield* revisionStore.revisionSecrets(tenantId, randomUUID())).toBeUndefined()
        const isActive = (items: ReadonlyArray<{ readonly deployment_id: string; readonly revision_id: string }>) =>
          items.some((item) => item.deployment_id === deployment.id && item.revision_id === revision.id)
        expect(isActive(yield* revisionStore.activeRevisions())).toBe(false)
        yield* deploymentStore.setDeploymentState(tenantId, deployment.id, "READY", revision.id, at(4))
        expect(isActive(yield* revisionStore.activeRevisions())).toBe(true)
        yield* deploymentStore.setDeploymentStatus(tenantId, deployment.id, "AWAITING_DELETE", at(5))
        expect(isActive(yield* revisionStore.activeRevisions())).toBe(false)
      })
    )

    it.effect("lists revisions newest first, filtered by status, in pages", () =>
      Effect.gen(function* () {
        const { revisionStore, tenantId, deployment } = yield* storedDeployment
        // Each new revision supersedes the unfinished one before it: 1 and 2 SKIPPED, 3 DEPLOYED, 4 CREATING.
        const second = yield* addRevision(deployment)
        const third = yield* addRevision(second.deployment)
        yield* advance(third.revision, "DEPLOYED", at(5))
        yield* addRevision(third.deployment)
        const all = yield* revisionStore.listRevisions(tenantId, deployment.id, null, { limit: 10, offset: 0 })
        expect(all.map((item) => item.seq)).toEqual([4, 3, 2, 1])
        expect((yield* revisionStore.listRevisions(tenantId, deployment.id, null, { limit: 2, offset: 2 })).map((item) => item.seq)).toEqual([2, 1])
        expect((yield* revisionStore.listRevisions(tenantId, deployment.id, ["SKIPPED", "CREATING"], { limit: 10, offset: 0 })).map((item) => item.seq)).toEqual([4, 2, 1])
      })
    )

    it.effect("filters deployments by name (case-insensitive), status and ids, newest first", () =>
      Effect.gen(function* () {
        const { deploymentStore } = yield* allStores
        const tenantId = yield* tenant
        const made = [0, 1, 2].map((index) => deploymentWithRevision(tenantId, { name: `shop-${index}-${randomUUID().slice(0, 8)}`, created_at: at(index), updated_at: at(index) }))
        yield* Effect.forEach(made, ({ deployment, revision }) => deploymentStore.createDeployment(deployment, revision, randomUUID()))
        yield* deploymentStore.setDeploymentStatus(tenantId, made[1]!.deployment.id, "READY", at(5))
        const none = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
        const names = (records: ReadonlyArray<{ name: string }>) => records.map((record) => record.name)
        expect(names(yield* deploymentStore.listDeployments(tenantId, none, { limit: 10, offset: 0 }))).toEqual(made.map((item) => item.deployment.name).reverse())
        expect(names(yield* deploymentStore.listDeployments(tenantId, { ...none, nameContains: "SHOP-1" }, { limit: 10, offset: 0 }))).toEqual([made[1]!.deployment.name])
        expect(names(yield* deploymentStore.listDeployments(tenantId, { ...none, statuses: ["READY"] }, { limit: 10, offset: 0 }))).toEqual([made[1]!.deployment.name])
        expect(names(yield* deploymentStore.listDeployments(tenantId, { ...none, ids: [made[0]!.deployment.id, made[2]!.deployment.id] }, { limit: 10, offset: 0 }))).toEqual([
          made[2]!.deployment.name,
          made[0]!.deployment.name
        ])
      })
    )

    it.effect("keeps listeners per tenant (compute_id unique per tenant) and names the deployments that use one", () =>
      Effect.gen(function* () {
        const { deploymentStore, integrationStore, listenerStore } = yield* allStores
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
        yield* listenerStore.insertListener(listener)
        const twin = yield* Effect.flip(listenerStore.insertListener({ ...listener, id: randomUUID() }))
        expect(twin._tag).toBe("Conflict")
        yield* listenerStore.insertListener({ ...listener, id: randomUUID(), tenant_id: stranger })
        expect(yield* listenerStore.listener(tenantId, listener.id)).toEqual(listener)
        expect(yield* listenerStore.listener(stranger, listener.id)).toBeUndefined()
        const { deployment, revision } = deploymentWithRevision(tenantId, {
          source_config: { listener_id: listener.id, listener_config: { k8s_namespace: "prod" } }
        })
        yield* deploymentStore.createDeployment(deployment, revision, randomUUID())
        expect(yield* listenerStore.listenerUsers(tenantId, listener.id)).toEqual([{ name: deployment.name, namespace: "prod" }])
        expect(yield* listenerStore.updateListener({ ...listener, compute_config: { k8s_namespaces: ["prod"] }, updated_at: at(1) })).toBe(true)
        expect((yield* listenerStore.listListeners(tenantId, { limit: 10, offset: 0 })).map((item) => item.compute_config)).toEqual([{ k8s_namespaces: ["prod"] }])
        expect(yield* listenerStore.deleteListener(stranger, listener.id)).toBe(false)
        expect(yield* listenerStore.deleteListener(tenantId, listener.id)).toBe(true)
        expect(yield* integrationStore.repositoriesOfIntegration(tenantId, randomUUID())).toEqual([])
      })
    )

    it.effect("finds integrations by tenant, by id and by owner across tenants", () =>
      Effect.gen(function* () {
        const { integrationStore } = yield* allStores
        const [a, b] = [yield* tenant, yield* tenant]
        const owner = unique("acme")
        const integration = (tenantId: string) => ({ id: randomUUID(), tenant_id: tenantId, provider: "github", owner, owner_key: owner, webhook_secret: "sealed", installed_at: at() })
        const first = integration(a)
        const second = integration(b)
        yield* integrationStore.insertIntegration(first)
        yield* integrationStore.insertIntegration(second)
        expect(yield* integrationStore.integrations(a)).toEqual([first])
        expect(yield* integrationStore.integration(b, first.id)).toBeUndefined()
        expect(new Set((yield* integrationStore.integrationsByOwner("github", owner)).map((item) => item.id))).toEqual(new Set([first.id, second.id]))
        expect(yield* integrationStore.integrationByOwner(a, "github", owner)).toEqual(first)
      })
    )

    it.effect("remembers a webhook delivery per integration until it expires, and prunes expired ones", () =>
      Effect.gen(function* () {
        const { integrationStore } = yield* allStores
        const tenantId = yield* tenant
        const integration = { id: randomUUID(), tenant_id: tenantId, provider: "github", owner: unique("o"), owner_key: unique("o"), webhook_secret: "sealed", installed_at: at() }
        const other = { ...integration, id: randomUUID(), owner: unique("p"), owner_key: unique("p") }
        yield* integrationStore.insertIntegration(integration)
        yield* integrationStore.insertIntegration(other)
        const delivery = randomUUID()
        const day = 24 * 60 * 60 * 1000
        expect(yield* integrationStore.rememberDelivery(integration.id, delivery, at(0), at(7 * day))).toBe(true)
        expect(yield* integrationStore.rememberDelivery(integration.id, delivery, at(1_000), at(7 * day + 1_000))).toBe(false)
        expect(yield* integrationStore.rememberDelivery(integration.id, delivery, at(7 * day - 1), at(14 * day))).toBe(false)
        // Another integration's deliveries are its own.
        expect(yield* integrationStore.rememberDelivery(other.id, delivery, at(1_000), at(7 * day))).toBe(true)
        // Once expired, the id is forgotten: it is pruned and may be received again.
        expect(yield* integrationStore.rememberDelivery(integration.id, delivery, at(7 * day), at(14 * day))).toBe(true)
        expect(yield* integrationStore.rememberDelivery(integration.id, randomUUID(), at(0), at(day))).toBe(true)
        expect(yield* integrationStore.rememberDelivery(integration.id, delivery, at(8 * day), at(15 * day))).toBe(false)
        // Removing the integration forgets its deliveries with it.
        expect(yield* integrationStore.deleteIntegration(tenantId, other.id)).toBe(true)
        expect(yield* integrationStore.deleteIntegration(tenantId, other.id)).toBe(false)
        expect(yield* integrationStore.integration(tenantId, other.id)).toBeUndefined()
      })
    )

    it.effect("keeps an integration's read token apart from its record: set, read and cleared within its tenant only", () =>
      Effect.gen(function* () {
        const { integrationStore } = yield* allStores
        const [owner, stranger] = [yield* tenant, yield* tenant]
        const integration = { id: randomUUID(), tenant_id: owner, provider: "github", owner: unique("t"), owner_key: unique("t"), webhook_secret: "sealed", installed_at: at() }
        yield* integrationStore.insertIntegration(integration)
        expect(yield* integrationStore.readToken(owner, integration.id)).toBeUndefined()
        expect(yield* integrationStore.setReadToken(stranger, integration.id, "sealed-token")).toBe(false)
        expect(yield* integrationStore.setReadToken(owner, integration.id, "sealed-token")).toBe(true)
        expect(yield* integrationStore.readToken(owner, integration.id)).toBe("sealed-token")
        expect(yield* integrationStore.readToken(stranger, integration.id)).toBeUndefined()
        // The record as listed and looked up does not carry it.
        expect(yield* integrationStore.integration(owner, integration.id)).toEqual(integration)
        expect(yield* integrationStore.setReadToken(owner, integration.id, null)).toBe(true)
        expect(yield* integrationStore.readToken(owner, integration.id)).toBeUndefined()
        expect(yield* integrationStore.setReadToken(owner, randomUUID(), "x")).toBe(false)
      })
    )

    it.effect("removes an integration only in its own tenant", () =>
      Effect.gen(function* () {
        const { integrationStore } = yield* allStores
        const [owner, stranger] = [yield* tenant, yield* tenant]
        const integration = { id: randomUUID(), tenant_id: owner, provider: "github", owner: unique("r"), owner_key: unique("r"), webhook_secret: "sealed", installed_at: at() }
        yield* integrationStore.insertIntegration(integration)
        expect(yield* integrationStore.deleteIntegration(stranger, integration.id)).toBe(false)
        expect(yield* integrationStore.integration(owner, integration.id)).toEqual(integration)
        expect(yield* integrationStore.deleteIntegration(owner, integration.id)).toBe(true)
        expect(yield* integrationStore.integrationsByOwner("github", integration.owner_key)).toEqual([])
      })
    )

    it.effect("finds push targets only among the deployments bound to the signing integration, and knows which commits a deployment built", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore } = yield* allStores
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
        for (const { deployment, revision } of [mine, theirs, none]) yield* deploymentStore.createDeployment(deployment, revision, randomUUID())
        expect((yield* deploymentStore.pushTargets(tenantId, bound, "refs/heads/main", "main")).map((record) => record.id)).toEqual([mine.deployment.id])
        expect((yield* deploymentStore.pushTargets(tenantId, bound.toUpperCase(), "refs/heads/main", "main")).map((record) => record.id)).toEqual([mine.deployment.id])
        expect(yield* deploymentStore.pushTargets(tenantId, bound, "refs/heads/dev", "dev")).toEqual([])

        const sha = "c0ffee".padEnd(40, "0")
        expect(yield* revisionStore.commitBuilt(tenantId, mine.deployment.id, sha, "main")).toBe(false)
        const built = yield* addRevision(mine.deployment, { source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json", repo_commit_sha: sha } })
        yield* advance(built.revision, "BUILD_FAILED", at(6))
        // Whatever became of that revision, the commit was built for that ref.
        expect(yield* revisionStore.commitBuilt(tenantId, mine.deployment.id, sha, "main")).toBe(true)
        expect(yield* revisionStore.commitBuilt(tenantId, mine.deployment.id, sha, "dev")).toBe(false)
        expect(yield* revisionStore.commitBuilt(tenantId, theirs.deployment.id, sha, "main")).toBe(false)
        const stranger = yield* tenant
        expect(yield* revisionStore.commitBuilt(stranger, mine.deployment.id, sha, "main")).toBe(false)
      })
    )

    it.effect("records the commit a revision built (as repo_commit_sha), which commitBuilt then knows; only within the tenant", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore } = yield* allStores
        const tenantId = yield* tenant
        const { deployment, revision } = deploymentWithRevision(tenantId, {
          source: "gitrepo",
          source_config: { repo_url: "https://github.com/acme/agent" },
          source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" }
        })
        yield* deploymentStore.createDeployment(deployment, revision, randomUUID())
        const sha = "beef".padEnd(40, "1")
        expect(yield* revisionStore.recordCommit(yield* tenant, revision.id, sha)).toBe(false)
        expect(yield* revisionStore.commitBuilt(tenantId, deployment.id, sha, "main")).toBe(false)
        expect(yield* revisionStore.recordCommit(tenantId, revision.id, sha)).toBe(true)
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.source_revision_config).toEqual({ repo_ref: "main", graph_config_path: "langgraph.json", repo_commit_sha: sha })
        expect(yield* revisionStore.commitBuilt(tenantId, deployment.id, sha, "main")).toBe(true)
        // A later build of the same revision (after a restart) records what it built.
        const other = "f00d".padEnd(40, "2")
        expect(yield* revisionStore.recordCommit(tenantId, revision.id, other)).toBe(true)
        expect((yield* revisionStore.revision(tenantId, deployment.id, revision.id))?.source_revision_config.repo_commit_sha).toBe(other)
      })
    )

    it.effect("adds a queued revision (a push): only the revisions that have not started are superseded (SKIPPED), one under way goes on", () =>
      Effect.gen(function* () {
        const { deploymentStore, revisionStore, tenantId, deployment, revision } = yield* storedDeployment
        const building = yield* advance(revision, "BUILDING", at(2))
        const queued = (previous: DeploymentRecord) =>
          Effect.gen(function* () {
            const next = revisionFor(previous, previous.revision_seq + 1)
            const pointing = { ...previous, latest_revision_id: next.id, revision_seq: next.seq }
            return { deployment: pointing, revision: next, stopped: yield* deploymentStore.addRevision(pointing, next, { queue: true }) }
          })
        const second = yield* queued(deployment)
        expect(second.stopped).toEqual([])
        const third = yield* queued(second.deployment)
        expect(third.stopped).toEqual([second.revision.id])
        const statusOf = (id: string) => Effect.map(revisionStore.revision(tenantId, deployment.id, id), (stored) => stored?.status)
        expect(yield* statusOf(building.id)).toBe("BUILDING")
        expect(yield* statusOf(second.revision.id)).toBe("SKIPPED")
        expect(yield* statusOf(third.revision.id)).toBe("CREATING")
        // Without `queue` (a PATCH, a new revision) everything unfinished is superseded.
        const fourth = yield* addRevision(third.deployment)
        expect([...fourth.stopped].sort()).toEqual([building.id, third.revision.id].sort())
        expect(yield* statusOf(building.id)).toBe("INTERRUPTED")
      })
    )

    it.effect("answers an empty page for any offset past the end, however large", () =>
      Effect.gen(function* () {
        const { deploymentStore, listenerStore, revisionStore, tenantId, deployment } = yield* storedDeployment
        const filter = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
        for (const offset of [5_000, 2 ** 53 + 2, 9.2e18, 2 ** 63, 2 ** 64, 1e300]) {
          const page = { limit: 10, offset }
          expect(yield* deploymentStore.listDeployments(tenantId, filter, page)).toEqual([])
          expect(yield* revisionStore.listRevisions(tenantId, deployment.id, null, page)).toEqual([])
          expect(yield* deploymentStore.listTracingProjects(tenantId, null, page)).toEqual([])
          expect(yield* listenerStore.listListeners(tenantId, page)).toEqual([])
        }
      })
    )

    it.effect("reseals every stored sealed value in one transaction, and rolls all of it back when one fails", () =>
      Effect.gen(function* () {
        const { transaction, deploymentStore, integrationStore } = yield* allStores
        const tenantId = yield* tenant
        const { deployment, revision } = deploymentWithRevision(tenantId, { secrets: [{ name: "A", value: "sealed-a" }, { name: "B", value: "sealed-b" }] })
        yield* deploymentStore.createDeployment(deployment, { ...revision, secrets: deployment.secrets }, randomUUID())
        const integration = { id: randomUUID(), tenant_id: tenantId, provider: "github", owner: unique("s"), owner_key: unique("s"), webhook_secret: "sealed-w", installed_at: at() }
        yield* integrationStore.insertIntegration(integration)
        yield* integrationStore.setReadToken(tenantId, integration.id, "sealed-t")

        // The store holds other tests' values too: a failing reseal must leave every one as it was.
        const resealAll = (reseal: (stored: string) => string) =>
          transaction(Effect.all({ secretValues: deploymentStore.resealSecrets(reseal), webhookSecrets: integrationStore.resealWebhookSecrets(reseal) }))
        const refused = yield* Effect.flip(
          resealAll((stored) => {
            if (stored === "sealed-w") throw new Error("cannot open")
            return `re:${stored}`
          })
        )
        expect(refused._tag).toBe("StoreError")
        expect((yield* deploymentStore.deployment(tenantId, deployment.id))?.secrets).toEqual(deployment.secrets)
        expect((yield* integrationStore.integration(tenantId, integration.id))?.webhook_secret).toBe("sealed-w")
        expect(yield* integrationStore.readToken(tenantId, integration.id)).toBe("sealed-t")

        const counts = yield* resealAll((stored) => `re:${stored}`)
        expect(counts.secretValues).toBeGreaterThanOrEqual(4)
        expect(counts.webhookSecrets).toBeGreaterThanOrEqual(2)
        expect((yield* deploymentStore.deployment(tenantId, deployment.id))?.secrets).toEqual([{ name: "A", value: "re:sealed-a" }, { name: "B", value: "re:sealed-b" }])
        expect((yield* integrationStore.integration(tenantId, integration.id))?.webhook_secret).toBe("re:sealed-w")
        expect(yield* integrationStore.readToken(tenantId, integration.id)).toBe("re:sealed-t")
      })
    )
  })
