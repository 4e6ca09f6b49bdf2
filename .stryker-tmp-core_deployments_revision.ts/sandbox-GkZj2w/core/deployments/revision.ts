/**
 * The revision state machine and the deployment status derived from it (design.md section 5).
 * Pure: the local runtime (server/) calls `advanceRevision` on a timer and stores the answer;
 * a Kubernetes runtime would call the same functions when its objects change.
 */
// @ts-nocheck
function stryNS_9fa48() {
  var g = typeof globalThis === 'object' && globalThis && globalThis.Math === Math && globalThis || new Function("return this")();
  var ns = g.__stryker__ || (g.__stryker__ = {});
  if (ns.activeMutant === undefined && g.process && g.process.env && g.process.env.__STRYKER_ACTIVE_MUTANT__) {
    ns.activeMutant = g.process.env.__STRYKER_ACTIVE_MUTANT__;
  }
  function retrieveNS() {
    return ns;
  }
  stryNS_9fa48 = retrieveNS;
  return retrieveNS();
}
stryNS_9fa48();
function stryCov_9fa48() {
  var ns = stryNS_9fa48();
  var cov = ns.mutantCoverage || (ns.mutantCoverage = {
    static: {},
    perTest: {}
  });
  function cover() {
    var c = cov.static;
    if (ns.currentTestId) {
      c = cov.perTest[ns.currentTestId] = cov.perTest[ns.currentTestId] || {};
    }
    var a = arguments;
    for (var i = 0; i < a.length; i++) {
      c[a[i]] = (c[a[i]] || 0) + 1;
    }
  }
  stryCov_9fa48 = cover;
  cover.apply(null, arguments);
}
function stryMutAct_9fa48(id) {
  var ns = stryNS_9fa48();
  function isActive(id) {
    if (ns.activeMutant === id) {
      if (ns.hitCount !== void 0 && ++ns.hitCount > ns.hitLimit) {
        throw new Error('Stryker: Hit count limit reached (' + ns.hitCount + ')');
      }
      return true;
    }
    return false;
  }
  stryMutAct_9fa48 = isActive;
  return isActive(id);
}
import { Schema } from "effect";
import type { DeploymentStatus, Source, SourceRevisionConfig } from "./model.ts";
export const revisionStatuses = ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"] as const;
export const RevisionStatus = Schema.Literals(revisionStatuses);
export type RevisionStatus = typeof RevisionStatus.Type;

/** The states a revision passes through when nothing fails, per source. */
export const happyPath: Record<Source, ReadonlyArray<RevisionStatus>> = stryMutAct_9fa48("0") ? {} : (stryCov_9fa48("0"), {
  gitrepo: stryMutAct_9fa48("1") ? [] : (stryCov_9fa48("1"), [stryMutAct_9fa48("2") ? "" : (stryCov_9fa48("2"), "CREATING"), stryMutAct_9fa48("3") ? "" : (stryCov_9fa48("3"), "QUEUED"), stryMutAct_9fa48("4") ? "" : (stryCov_9fa48("4"), "AWAITING_BUILD"), stryMutAct_9fa48("5") ? "" : (stryCov_9fa48("5"), "BUILDING"), stryMutAct_9fa48("6") ? "" : (stryCov_9fa48("6"), "AWAITING_DEPLOY"), stryMutAct_9fa48("7") ? "" : (stryCov_9fa48("7"), "DEPLOYING"), stryMutAct_9fa48("8") ? "" : (stryCov_9fa48("8"), "DEPLOYED")]),
  // An external container image is already built: nothing to wait for or build.
  external_container: stryMutAct_9fa48("9") ? [] : (stryCov_9fa48("9"), [stryMutAct_9fa48("10") ? "" : (stryCov_9fa48("10"), "CREATING"), stryMutAct_9fa48("11") ? "" : (stryCov_9fa48("11"), "QUEUED"), stryMutAct_9fa48("12") ? "" : (stryCov_9fa48("12"), "AWAITING_DEPLOY"), stryMutAct_9fa48("13") ? "" : (stryCov_9fa48("13"), "DEPLOYING"), stryMutAct_9fa48("14") ? "" : (stryCov_9fa48("14"), "DEPLOYED")])
});
const failedStatuses: ReadonlySet<RevisionStatus> = new Set(stryMutAct_9fa48("15") ? [] : (stryCov_9fa48("15"), [stryMutAct_9fa48("16") ? "" : (stryCov_9fa48("16"), "CREATE_FAILED"), stryMutAct_9fa48("17") ? "" : (stryCov_9fa48("17"), "BUILD_FAILED"), stryMutAct_9fa48("18") ? "" : (stryCov_9fa48("18"), "DEPLOY_FAILED")]));
/** Created but not yet picked up: superseding it means it never ran (SKIPPED). */
const pendingStatuses: ReadonlySet<RevisionStatus> = new Set(stryMutAct_9fa48("19") ? [] : (stryCov_9fa48("19"), [stryMutAct_9fa48("20") ? "" : (stryCov_9fa48("20"), "CREATING"), stryMutAct_9fa48("21") ? "" : (stryCov_9fa48("21"), "QUEUED")]));
/** Work has started: superseding it stops that work (INTERRUPTED). */
const inProgressStatuses: ReadonlySet<RevisionStatus> = new Set(stryMutAct_9fa48("22") ? [] : (stryCov_9fa48("22"), [stryMutAct_9fa48("23") ? "" : (stryCov_9fa48("23"), "AWAITING_BUILD"), stryMutAct_9fa48("24") ? "" : (stryCov_9fa48("24"), "BUILDING"), stryMutAct_9fa48("25") ? "" : (stryCov_9fa48("25"), "AWAITING_DEPLOY"), stryMutAct_9fa48("26") ? "" : (stryCov_9fa48("26"), "DEPLOYING")]));
export const isFailed = stryMutAct_9fa48("27") ? () => undefined : (stryCov_9fa48("27"), (() => {
  const isFailed = (status: RevisionStatus): boolean => failedStatuses.has(status);
  return isFailed;
})());
export const isPending = stryMutAct_9fa48("28") ? () => undefined : (stryCov_9fa48("28"), (() => {
  const isPending = (status: RevisionStatus): boolean => pendingStatuses.has(status);
  return isPending;
})());
export const isInProgress = stryMutAct_9fa48("29") ? () => undefined : (stryCov_9fa48("29"), (() => {
  const isInProgress = (status: RevisionStatus): boolean => inProgressStatuses.has(status);
  return isInProgress;
})());
/**
 * Nothing will move the revision any further. UNKNOWN counts as terminal because no runtime
 * knows how to advance it (the local runtime never assigns it).
 */
export const isTerminal = stryMutAct_9fa48("30") ? () => undefined : (stryCov_9fa48("30"), (() => {
  const isTerminal = (status: RevisionStatus): boolean => stryMutAct_9fa48("33") ? !isPending(status) || !isInProgress(status) : stryMutAct_9fa48("32") ? false : stryMutAct_9fa48("31") ? true : (stryCov_9fa48("31", "32", "33"), (stryMutAct_9fa48("34") ? isPending(status) : (stryCov_9fa48("34"), !isPending(status))) && (stryMutAct_9fa48("35") ? isInProgress(status) : (stryCov_9fa48("35"), !isInProgress(status))));
  return isTerminal;
})());

/** The next state on the happy path, or null when the revision has nowhere further to go. */
export const nextStatus = (status: RevisionStatus, source: Source): RevisionStatus | null => {
  if (stryMutAct_9fa48("36")) {
    {}
  } else {
    stryCov_9fa48("36");
    const path = happyPath[source];
    const index = path.indexOf(status);
    return (stryMutAct_9fa48("39") ? index === -1 && index === path.length - 1 : stryMutAct_9fa48("38") ? false : stryMutAct_9fa48("37") ? true : (stryCov_9fa48("37", "38", "39"), (stryMutAct_9fa48("41") ? index !== -1 : stryMutAct_9fa48("40") ? false : (stryCov_9fa48("40", "41"), index === (stryMutAct_9fa48("42") ? +1 : (stryCov_9fa48("42"), -1)))) || (stryMutAct_9fa48("44") ? index !== path.length - 1 : stryMutAct_9fa48("43") ? false : (stryCov_9fa48("43", "44"), index === (stryMutAct_9fa48("45") ? path.length + 1 : (stryCov_9fa48("45"), path.length - 1)))))) ? null : path[stryMutAct_9fa48("46") ? index - 1 : (stryCov_9fa48("46"), index + 1)]!;
  }
};

/**
 * What a revision becomes when a newer one replaces it before it finished: SKIPPED if it never
 * started, INTERRUPTED if it was under way. A finished revision keeps its status (a DEPLOYED
 * one stays DEPLOYED in the history, it just stops being the active revision).
 */
export const supersededStatus = stryMutAct_9fa48("47") ? () => undefined : (stryCov_9fa48("47"), (() => {
  const supersededStatus = (status: RevisionStatus): RevisionStatus => isPending(status) ? stryMutAct_9fa48("48") ? "" : (stryCov_9fa48("48"), "SKIPPED") : isInProgress(status) ? stryMutAct_9fa48("49") ? "" : (stryCov_9fa48("49"), "INTERRUPTED") : status;
  return supersededStatus;
})());

/**
 * Failure hooks of the local runtime, so users and tests can watch the failure paths without a
 * real build system. The marker is looked for in `image_uri` (external_container) or in
 * `graph_config_path` and `repo_ref` (gitrepo, which has no image uri to carry it):
 *
 * - `fail-create`: leaves CREATING as CREATE_FAILED.
 * - `fail-build`: leaves BUILDING as BUILD_FAILED. external_container has no build state, so
 *   there the image check that stands in for the build fails: it leaves QUEUED as BUILD_FAILED.
 * - `fail-deploy`: leaves DEPLOYING as DEPLOY_FAILED.
 */
export interface FailureHook {
  readonly marker: string;
  /** The state the revision is in when it fails. */
  readonly at: RevisionStatus;
  readonly becomes: RevisionStatus;
  readonly message: string;
}
const failureHooks = stryMutAct_9fa48("50") ? () => undefined : (stryCov_9fa48("50"), (() => {
  const failureHooks = (source: Source): ReadonlyArray<FailureHook> => stryMutAct_9fa48("51") ? [] : (stryCov_9fa48("51"), [stryMutAct_9fa48("52") ? {} : (stryCov_9fa48("52"), {
    marker: stryMutAct_9fa48("53") ? "" : (stryCov_9fa48("53"), "fail-create"),
    at: stryMutAct_9fa48("54") ? "" : (stryCov_9fa48("54"), "CREATING"),
    becomes: stryMutAct_9fa48("55") ? "" : (stryCov_9fa48("55"), "CREATE_FAILED"),
    message: stryMutAct_9fa48("56") ? "" : (stryCov_9fa48("56"), "Revision could not be created (fail-create marker)")
  }), stryMutAct_9fa48("57") ? {} : (stryCov_9fa48("57"), {
    marker: stryMutAct_9fa48("58") ? "" : (stryCov_9fa48("58"), "fail-build"),
    at: (stryMutAct_9fa48("61") ? source !== "gitrepo" : stryMutAct_9fa48("60") ? false : stryMutAct_9fa48("59") ? true : (stryCov_9fa48("59", "60", "61"), source === (stryMutAct_9fa48("62") ? "" : (stryCov_9fa48("62"), "gitrepo")))) ? stryMutAct_9fa48("63") ? "" : (stryCov_9fa48("63"), "BUILDING") : stryMutAct_9fa48("64") ? "" : (stryCov_9fa48("64"), "QUEUED"),
    becomes: stryMutAct_9fa48("65") ? "" : (stryCov_9fa48("65"), "BUILD_FAILED"),
    message: (stryMutAct_9fa48("68") ? source !== "gitrepo" : stryMutAct_9fa48("67") ? false : stryMutAct_9fa48("66") ? true : (stryCov_9fa48("66", "67", "68"), source === (stryMutAct_9fa48("69") ? "" : (stryCov_9fa48("69"), "gitrepo")))) ? stryMutAct_9fa48("70") ? "" : (stryCov_9fa48("70"), "Build failed (fail-build marker)") : stryMutAct_9fa48("71") ? "" : (stryCov_9fa48("71"), "Image could not be prepared (fail-build marker)")
  }), stryMutAct_9fa48("72") ? {} : (stryCov_9fa48("72"), {
    marker: stryMutAct_9fa48("73") ? "" : (stryCov_9fa48("73"), "fail-deploy"),
    at: stryMutAct_9fa48("74") ? "" : (stryCov_9fa48("74"), "DEPLOYING"),
    becomes: stryMutAct_9fa48("75") ? "" : (stryCov_9fa48("75"), "DEPLOY_FAILED"),
    message: stryMutAct_9fa48("76") ? "" : (stryCov_9fa48("76"), "Deploy failed (fail-deploy marker)")
  })]);
  return failureHooks;
})());
const markerText = stryMutAct_9fa48("77") ? () => undefined : (stryCov_9fa48("77"), (() => {
  const markerText = (source: Source, config: SourceRevisionConfig): string => (stryMutAct_9fa48("80") ? source !== "external_container" : stryMutAct_9fa48("79") ? false : stryMutAct_9fa48("78") ? true : (stryCov_9fa48("78", "79", "80"), source === (stryMutAct_9fa48("81") ? "" : (stryCov_9fa48("81"), "external_container")))) ? stryMutAct_9fa48("82") ? config.image_uri && "" : (stryCov_9fa48("82"), config.image_uri ?? (stryMutAct_9fa48("83") ? "Stryker was here!" : (stryCov_9fa48("83"), ""))) : stryMutAct_9fa48("84") ? `` : (stryCov_9fa48("84"), `${stryMutAct_9fa48("85") ? config.graph_config_path && "" : (stryCov_9fa48("85"), config.graph_config_path ?? (stryMutAct_9fa48("86") ? "Stryker was here!" : (stryCov_9fa48("86"), "")))} ${stryMutAct_9fa48("87") ? config.repo_ref && "" : (stryCov_9fa48("87"), config.repo_ref ?? (stryMutAct_9fa48("88") ? "Stryker was here!" : (stryCov_9fa48("88"), "")))}`);
  return markerText;
})());

/** The failure hook a revision's config asks for, if any (the first marker found wins). */
export const failureHookFor = stryMutAct_9fa48("89") ? () => undefined : (stryCov_9fa48("89"), (() => {
  const failureHookFor = (source: Source, config: SourceRevisionConfig): FailureHook | null => stryMutAct_9fa48("90") ? failureHooks(source).find(hook => markerText(source, config).includes(hook.marker)) && null : (stryCov_9fa48("90"), failureHooks(source).find(stryMutAct_9fa48("91") ? () => undefined : (stryCov_9fa48("91"), hook => markerText(source, config).includes(hook.marker))) ?? null);
  return failureHookFor;
})());
export interface RevisionStep {
  readonly status: RevisionStatus;
  readonly status_message: string | null;
}

/**
 * One tick of the local runtime: the state after `status`, taking the failure hooks into
 * account, or null when the revision is terminal (or in a state this source never visits).
 */
export const advanceRevision = (status: RevisionStatus, source: Source, config: SourceRevisionConfig): RevisionStep | null => {
  if (stryMutAct_9fa48("92")) {
    {}
  } else {
    stryCov_9fa48("92");
    const hook = failureHookFor(source, config);
    if (stryMutAct_9fa48("95") ? hook || hook.at === status : stryMutAct_9fa48("94") ? false : stryMutAct_9fa48("93") ? true : (stryCov_9fa48("93", "94", "95"), hook && (stryMutAct_9fa48("97") ? hook.at !== status : stryMutAct_9fa48("96") ? true : (stryCov_9fa48("96", "97"), hook.at === status)))) return stryMutAct_9fa48("98") ? {} : (stryCov_9fa48("98"), {
      status: hook.becomes,
      status_message: hook.message
    });
    const next = nextStatus(status, source);
    return (stryMutAct_9fa48("101") ? next !== null : stryMutAct_9fa48("100") ? false : stryMutAct_9fa48("99") ? true : (stryCov_9fa48("99", "100", "101"), next === null)) ? null : stryMutAct_9fa48("102") ? {} : (stryCov_9fa48("102"), {
      status: next,
      status_message: (stryMutAct_9fa48("105") ? next !== "DEPLOYED" : stryMutAct_9fa48("104") ? false : stryMutAct_9fa48("103") ? true : (stryCov_9fa48("103", "104", "105"), next === (stryMutAct_9fa48("106") ? "" : (stryCov_9fa48("106"), "DEPLOYED")))) ? stryMutAct_9fa48("107") ? "" : (stryCov_9fa48("107"), "Deployed") : null
    });
  }
};
export interface DeploymentStatusInput {
  /** The revision currently serving traffic; null until a revision first deploys. */
  readonly activeRevisionId: string | null;
  /** The effective `resource_spec.max_scale`; null or undefined when not set. */
  readonly maxScale: number | null | undefined;
  readonly deleting: boolean;
}

/**
 * The deployment status is derived, never stored on its own, so it cannot disagree with the
 * revisions: AWAITING_DELETE while a delete runs; AWAITING_DATABASE until some revision has
 * deployed; then UNUSED when scaled to zero, else READY. UNKNOWN is never produced locally.
 */
export const deploymentStatus = ({
  activeRevisionId,
  maxScale,
  deleting
}: DeploymentStatusInput): DeploymentStatus => {
  if (stryMutAct_9fa48("108")) {
    {}
  } else {
    stryCov_9fa48("108");
    if (stryMutAct_9fa48("110") ? false : stryMutAct_9fa48("109") ? true : (stryCov_9fa48("109", "110"), deleting)) return stryMutAct_9fa48("111") ? "" : (stryCov_9fa48("111"), "AWAITING_DELETE");
    if (stryMutAct_9fa48("114") ? activeRevisionId !== null : stryMutAct_9fa48("113") ? false : stryMutAct_9fa48("112") ? true : (stryCov_9fa48("112", "113", "114"), activeRevisionId === null)) return stryMutAct_9fa48("115") ? "" : (stryCov_9fa48("115"), "AWAITING_DATABASE");
    return (stryMutAct_9fa48("118") ? maxScale !== 0 : stryMutAct_9fa48("117") ? false : stryMutAct_9fa48("116") ? true : (stryCov_9fa48("116", "117", "118"), maxScale === 0)) ? stryMutAct_9fa48("119") ? "" : (stryCov_9fa48("119"), "UNUSED") : stryMutAct_9fa48("120") ? "" : (stryCov_9fa48("120"), "READY");
  }
};

/**
 * A revision can be made active again only if it reached DEPLOYED at some point: its image
 * exists and once ran. `deployed_at` records that, because its current status may since have
 * changed (nothing in the local runtime changes a DEPLOYED status, but a store may).
 */
export const everDeployed = stryMutAct_9fa48("121") ? () => undefined : (stryCov_9fa48("121"), (() => {
  const everDeployed = (revision: {
    readonly status: RevisionStatus;
    readonly deployed_at: string | null;
  }): boolean => stryMutAct_9fa48("124") ? revision.deployed_at !== null && revision.status === "DEPLOYED" : stryMutAct_9fa48("123") ? false : stryMutAct_9fa48("122") ? true : (stryCov_9fa48("122", "123", "124"), (stryMutAct_9fa48("126") ? revision.deployed_at === null : stryMutAct_9fa48("125") ? false : (stryCov_9fa48("125", "126"), revision.deployed_at !== null)) || (stryMutAct_9fa48("128") ? revision.status !== "DEPLOYED" : stryMutAct_9fa48("127") ? false : (stryCov_9fa48("127", "128"), revision.status === (stryMutAct_9fa48("129") ? "" : (stryCov_9fa48("129"), "DEPLOYED")))));
  return everDeployed;
})());

/**
 * What a revision reaching DEPLOYED (or being redeployed) does to its deployment: it becomes the
 * active revision. `latest_revision_id` is untouched: redeploy creates no revision, so the
 * deployment's `source_revision_config` keeps describing the latest one (spec 2.1).
 */
export const activate = stryMutAct_9fa48("130") ? () => undefined : (stryCov_9fa48("130"), (() => {
  const activate = (revisionId: string): {
    readonly active_revision_id: string;
  } => stryMutAct_9fa48("131") ? {} : (stryCov_9fa48("131"), {
    active_revision_id: revisionId
  });
  return activate;
})());