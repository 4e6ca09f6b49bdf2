/**
 * Rules of the control plane that need more than a body's shape: which fields belong to which
 * source, what each source requires, read-only and immutable fields, the tag/build_on_push rule,
 * what a PATCH changes and whether it creates a revision, push-triggered builds, and which
 * revisions can be redeployed. Pure functions over decoded bodies and stored state; the server
 * does the lookups and the writes.
 *
 * Every rule reports all its problems at once (as FastAPI does), each with the exact `loc` of the
 * field at fault. Issue types:
 * - `missing`: a field the source requires is absent or null;
 * - `value_error`: a field of the other source, a read-only field, the tag/build_on_push rule,
 *   an unknown listener or namespace, a masked secret value for an unknown secret;
 * - `frozen_field` (pydantic's name for assigning a frozen field): an immutable field changed.
 *
 * Null means "not set" everywhere: a null field of the other source is accepted (clients often
 * send whole objects), and a null PATCH field leaves the stored value as it is.
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
import { Result } from "effect";
import { BadRequest, ValidationError } from "../api/errors.ts";
import { ValidationIssue, type Loc } from "../api/validation.ts";
import { secretMask, SourceConfig, SourceRevisionConfig, type CreateDeployment, type CreateRevision, type Listener, type PatchDeployment, type PushEvent, type Secret, type Source, type SourceConfigField, type SourceRevisionConfigField } from "./model.ts";
import { everDeployed, type RevisionStatus } from "./revision.ts";
import { branchOf } from "./sourceFields.ts";

// ---------------------------------------------------------------------------------------------
// Shared vocabulary

/** The deployment as stored: source config and revision config of the latest revision, secrets in clear. */
export interface StoredDeployment {
  readonly name: string;
  readonly source: Source;
  readonly source_config: SourceConfig;
  readonly source_revision_config: SourceRevisionConfig;
  readonly secrets: ReadonlyArray<Secret>;
  readonly image_version?: string | null | undefined;
}

/** The configuration a new revision is created with: complete, not a delta. */
export interface NewRevision {
  readonly source_revision_config: SourceRevisionConfig;
  readonly secrets: ReadonlyArray<Secret>;
}

/** A validated create request, completed with generated values, ready to store. */
export interface NewDeployment extends NewRevision {
  readonly name: string;
  readonly source: Source;
  readonly source_config: SourceConfig;
  readonly image_version: string | null;
}
interface ConfigParts {
  readonly source_config?: SourceConfig | null | undefined;
  readonly source_revision_config?: SourceRevisionConfig | null | undefined;
}
type Group = keyof ConfigParts;
type FieldOf<G extends Group> = G extends "source_config" ? SourceConfigField : SourceRevisionConfigField;
type FieldsByGroup = { readonly [G in Group]: ReadonlyArray<FieldOf<G>> };
const bodyLoc = ["body"] as const;
const fieldLoc = stryMutAct_9fa48("0") ? () => undefined : (stryCov_9fa48("0"), (() => {
  const fieldLoc = (group: Group, field: string): Loc => stryMutAct_9fa48("1") ? [] : (stryCov_9fa48("1"), [...bodyLoc, group, field]);
  return fieldLoc;
})());
const issue = stryMutAct_9fa48("2") ? () => undefined : (stryCov_9fa48("2"), (() => {
  const issue = (loc: Loc, msg: string, type = stryMutAct_9fa48("3") ? "" : (stryCov_9fa48("3"), "value_error")) => new ValidationIssue(stryMutAct_9fa48("4") ? {} : (stryCov_9fa48("4"), {
    loc: stryMutAct_9fa48("5") ? [] : (stryCov_9fa48("5"), [...loc]),
    msg,
    type
  }));
  return issue;
})());
const isSet = stryMutAct_9fa48("6") ? () => undefined : (stryCov_9fa48("6"), (() => {
  const isSet = <A,>(value: A | null | undefined): value is A => stryMutAct_9fa48("9") ? value !== null || value !== undefined : stryMutAct_9fa48("8") ? false : stryMutAct_9fa48("7") ? true : (stryCov_9fa48("7", "8", "9"), (stryMutAct_9fa48("11") ? value === null : stryMutAct_9fa48("10") ? true : (stryCov_9fa48("10", "11"), value !== null)) && (stryMutAct_9fa48("13") ? value === undefined : stryMutAct_9fa48("12") ? true : (stryCov_9fa48("12", "13"), value !== undefined)));
  return isSet;
})());
const fieldValue = stryMutAct_9fa48("14") ? () => undefined : (stryCov_9fa48("14"), (() => {
  const fieldValue = (parts: ConfigParts, group: Group, field: string): unknown => stryMutAct_9fa48("15") ? (parts[group] as Record<string, unknown> | null | undefined)[field] : (stryCov_9fa48("15"), (parts[group] as Record<string, unknown> | null | undefined)?.[field]);
  return fieldValue;
})());

/** Equality of JSON values where a null and an absent key mean the same thing. */
export const sameValue = (a: unknown, b: unknown): boolean => {
  if (stryMutAct_9fa48("16")) {
    {}
  } else {
    stryCov_9fa48("16");
    if (stryMutAct_9fa48("19") ? !isSet(a) && !isSet(b) : stryMutAct_9fa48("18") ? false : stryMutAct_9fa48("17") ? true : (stryCov_9fa48("17", "18", "19"), (stryMutAct_9fa48("20") ? isSet(a) : (stryCov_9fa48("20"), !isSet(a))) || (stryMutAct_9fa48("21") ? isSet(b) : (stryCov_9fa48("21"), !isSet(b))))) return stryMutAct_9fa48("24") ? !isSet(a) || !isSet(b) : stryMutAct_9fa48("23") ? false : stryMutAct_9fa48("22") ? true : (stryCov_9fa48("22", "23", "24"), (stryMutAct_9fa48("25") ? isSet(a) : (stryCov_9fa48("25"), !isSet(a))) && (stryMutAct_9fa48("26") ? isSet(b) : (stryCov_9fa48("26"), !isSet(b))));
    if (stryMutAct_9fa48("29") ? typeof a !== "object" && typeof b !== "object" : stryMutAct_9fa48("28") ? false : stryMutAct_9fa48("27") ? true : (stryCov_9fa48("27", "28", "29"), (stryMutAct_9fa48("31") ? typeof a === "object" : stryMutAct_9fa48("30") ? false : (stryCov_9fa48("30", "31"), typeof a !== (stryMutAct_9fa48("32") ? "" : (stryCov_9fa48("32"), "object")))) || (stryMutAct_9fa48("34") ? typeof b === "object" : stryMutAct_9fa48("33") ? false : (stryCov_9fa48("33", "34"), typeof b !== (stryMutAct_9fa48("35") ? "" : (stryCov_9fa48("35"), "object")))))) return stryMutAct_9fa48("38") ? a !== b : stryMutAct_9fa48("37") ? false : stryMutAct_9fa48("36") ? true : (stryCov_9fa48("36", "37", "38"), a === b);
    if (stryMutAct_9fa48("41") ? Array.isArray(a) === Array.isArray(b) : stryMutAct_9fa48("40") ? false : stryMutAct_9fa48("39") ? true : (stryCov_9fa48("39", "40", "41"), Array.isArray(a) !== Array.isArray(b))) return stryMutAct_9fa48("42") ? true : (stryCov_9fa48("42"), false);
    const keys = new Set(stryMutAct_9fa48("43") ? [] : (stryCov_9fa48("43"), [...Object.keys(a as object), ...Object.keys(b as object)]));
    return stryMutAct_9fa48("44") ? [...keys].some(key => sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) : (stryCov_9fa48("44"), (stryMutAct_9fa48("45") ? [] : (stryCov_9fa48("45"), [...keys])).every(stryMutAct_9fa48("46") ? () => undefined : (stryCov_9fa48("46"), key => sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))));
  }
};
const toResult = stryMutAct_9fa48("47") ? () => undefined : (stryCov_9fa48("47"), (() => {
  const toResult = <A,>(issues: ReadonlyArray<ValidationIssue>, value: () => A): Result.Result<A, ValidationError> => (stryMutAct_9fa48("51") ? issues.length <= 0 : stryMutAct_9fa48("50") ? issues.length >= 0 : stryMutAct_9fa48("49") ? false : stryMutAct_9fa48("48") ? true : (stryCov_9fa48("48", "49", "50", "51"), issues.length > 0)) ? Result.fail(new ValidationError(stryMutAct_9fa48("52") ? {} : (stryCov_9fa48("52"), {
    issues: stryMutAct_9fa48("53") ? [] : (stryCov_9fa48("53"), [...issues])
  }))) : Result.succeed(value());
  return toResult;
})());

// ---------------------------------------------------------------------------------------------
// Per-source fields

/**
 * Fields only one source can use. install_command and build_command ("JS deployments only")
 * are gitrepo fields: an external container arrives already built. Whether a gitrepo deployment
 * is JS is only known once its graph config is read at build time, so they are accepted for every
 * gitrepo deployment and ignored by non-JS builds.
 */
export const sourceOnlyFields: Record<Source, FieldsByGroup> = stryMutAct_9fa48("54") ? {} : (stryCov_9fa48("54"), {
  gitrepo: stryMutAct_9fa48("55") ? {} : (stryCov_9fa48("55"), {
    source_config: stryMutAct_9fa48("56") ? [] : (stryCov_9fa48("56"), [stryMutAct_9fa48("57") ? "" : (stryCov_9fa48("57"), "integration_id"), stryMutAct_9fa48("58") ? "" : (stryCov_9fa48("58"), "repo_url"), stryMutAct_9fa48("59") ? "" : (stryCov_9fa48("59"), "deployment_type"), stryMutAct_9fa48("60") ? "" : (stryCov_9fa48("60"), "build_on_push"), stryMutAct_9fa48("61") ? "" : (stryCov_9fa48("61"), "install_command"), stryMutAct_9fa48("62") ? "" : (stryCov_9fa48("62"), "build_command")]),
    source_revision_config: stryMutAct_9fa48("63") ? [] : (stryCov_9fa48("63"), [stryMutAct_9fa48("64") ? "" : (stryCov_9fa48("64"), "repo_ref"), stryMutAct_9fa48("65") ? "" : (stryCov_9fa48("65"), "graph_config_path"), stryMutAct_9fa48("66") ? "" : (stryCov_9fa48("66"), "repo_commit_sha")])
  }),
  external_container: stryMutAct_9fa48("67") ? {} : (stryCov_9fa48("67"), {
    source_config: stryMutAct_9fa48("68") ? [] : (stryCov_9fa48("68"), [stryMutAct_9fa48("69") ? "" : (stryCov_9fa48("69"), "listener_id"), stryMutAct_9fa48("70") ? "" : (stryCov_9fa48("70"), "listener_config"), stryMutAct_9fa48("71") ? "" : (stryCov_9fa48("71"), "resource_spec")]),
    source_revision_config: stryMutAct_9fa48("72") ? [] : (stryCov_9fa48("72"), [stryMutAct_9fa48("73") ? "" : (stryCov_9fa48("73"), "image_uri")])
  })
});

/** What each source cannot do without (checked on create; PATCH can only add to it). */
export const requiredFields: Record<Source, FieldsByGroup> = stryMutAct_9fa48("74") ? {} : (stryCov_9fa48("74"), {
  gitrepo: stryMutAct_9fa48("75") ? {} : (stryCov_9fa48("75"), {
    source_config: stryMutAct_9fa48("76") ? [] : (stryCov_9fa48("76"), [stryMutAct_9fa48("77") ? "" : (stryCov_9fa48("77"), "repo_url")]),
    source_revision_config: stryMutAct_9fa48("78") ? [] : (stryCov_9fa48("78"), [stryMutAct_9fa48("79") ? "" : (stryCov_9fa48("79"), "repo_ref"), stryMutAct_9fa48("80") ? "" : (stryCov_9fa48("80"), "graph_config_path")])
  }),
  external_container: stryMutAct_9fa48("81") ? {} : (stryCov_9fa48("81"), {
    source_config: stryMutAct_9fa48("82") ? ["Stryker was here"] : (stryCov_9fa48("82"), []),
    source_revision_config: stryMutAct_9fa48("83") ? [] : (stryCov_9fa48("83"), [stryMutAct_9fa48("84") ? "" : (stryCov_9fa48("84"), "image_uri")])
  })
});

/** Fields the server sets: `custom_url` is generated for gitrepo, `repo_commit_sha` comes from the build or push. */
export const readOnlyFields: Record<Source, FieldsByGroup> = stryMutAct_9fa48("85") ? {} : (stryCov_9fa48("85"), {
  gitrepo: stryMutAct_9fa48("86") ? {} : (stryCov_9fa48("86"), {
    source_config: stryMutAct_9fa48("87") ? [] : (stryCov_9fa48("87"), [stryMutAct_9fa48("88") ? "" : (stryCov_9fa48("88"), "custom_url")]),
    source_revision_config: stryMutAct_9fa48("89") ? [] : (stryCov_9fa48("89"), [stryMutAct_9fa48("90") ? "" : (stryCov_9fa48("90"), "repo_commit_sha")])
  }),
  external_container: stryMutAct_9fa48("91") ? {} : (stryCov_9fa48("91"), {
    source_config: stryMutAct_9fa48("92") ? ["Stryker was here"] : (stryCov_9fa48("92"), []),
    source_revision_config: stryMutAct_9fa48("93") ? ["Stryker was here"] : (stryCov_9fa48("93"), [])
  })
});

/** Fields fixed at creation (spec 2.2): PATCH may repeat them, never change them. */
export const immutableSourceConfigFields: ReadonlyArray<SourceConfigField> = stryMutAct_9fa48("94") ? [] : (stryCov_9fa48("94"), [stryMutAct_9fa48("95") ? "" : (stryCov_9fa48("95"), "integration_id"), stryMutAct_9fa48("96") ? "" : (stryCov_9fa48("96"), "repo_url"), stryMutAct_9fa48("97") ? "" : (stryCov_9fa48("97"), "deployment_type"), stryMutAct_9fa48("98") ? "" : (stryCov_9fa48("98"), "listener_id"), stryMutAct_9fa48("99") ? "" : (stryCov_9fa48("99"), "listener_config")]);
const groups: ReadonlyArray<Group> = stryMutAct_9fa48("100") ? [] : (stryCov_9fa48("100"), [stryMutAct_9fa48("101") ? "" : (stryCov_9fa48("101"), "source_config"), stryMutAct_9fa48("102") ? "" : (stryCov_9fa48("102"), "source_revision_config")]);
const otherSource = stryMutAct_9fa48("103") ? () => undefined : (stryCov_9fa48("103"), (() => {
  const otherSource = (source: Source): Source => (stryMutAct_9fa48("106") ? source !== "gitrepo" : stryMutAct_9fa48("105") ? false : stryMutAct_9fa48("104") ? true : (stryCov_9fa48("104", "105", "106"), source === (stryMutAct_9fa48("107") ? "" : (stryCov_9fa48("107"), "gitrepo")))) ? stryMutAct_9fa48("108") ? "" : (stryCov_9fa48("108"), "external_container") : stryMutAct_9fa48("109") ? "" : (stryCov_9fa48("109"), "gitrepo");
  return otherSource;
})());
type FieldList = ReadonlyArray<{
  readonly group: Group;
  readonly field: string;
}>;

// The field tables are constants: flatten each once, not on every request.
const flattened = new WeakMap<FieldsByGroup, FieldList>();
const eachField = (fields: FieldsByGroup): FieldList => {
  if (stryMutAct_9fa48("110")) {
    {}
  } else {
    stryCov_9fa48("110");
    let list = flattened.get(fields);
    if (stryMutAct_9fa48("113") ? false : stryMutAct_9fa48("112") ? true : stryMutAct_9fa48("111") ? list : (stryCov_9fa48("111", "112", "113"), !list)) {
      if (stryMutAct_9fa48("114")) {
        {}
      } else {
        stryCov_9fa48("114");
        list = groups.flatMap(stryMutAct_9fa48("115") ? () => undefined : (stryCov_9fa48("115"), group => fields[group].map(stryMutAct_9fa48("116") ? () => undefined : (stryCov_9fa48("116"), field => stryMutAct_9fa48("117") ? {} : (stryCov_9fa48("117"), {
          group,
          field
        })))));
        if (stryMutAct_9fa48("118")) {
          ;
        } else {
          stryCov_9fa48("118");
          flattened.set(fields, list);
        }
      }
    }
    return list;
  }
};

/** Fields of the other source that were sent with a value. */
export const wrongSourceIssues = (source: Source, parts: ConfigParts): Array<ValidationIssue> => {
  if (stryMutAct_9fa48("119")) {
    {}
  } else {
    stryCov_9fa48("119");
    const other = otherSource(source);
    return stryMutAct_9fa48("120") ? eachField(sourceOnlyFields[other]).map(({
      group,
      field
    }) => issue(fieldLoc(group, field), `${field} applies to ${other} deployments only; this deployment's source is ${source}`)) : (stryCov_9fa48("120"), eachField(sourceOnlyFields[other]).filter(stryMutAct_9fa48("121") ? () => undefined : (stryCov_9fa48("121"), ({
      group,
      field
    }) => isSet(fieldValue(parts, group, field)))).map(stryMutAct_9fa48("122") ? () => undefined : (stryCov_9fa48("122"), ({
      group,
      field
    }) => issue(fieldLoc(group, field), stryMutAct_9fa48("123") ? `` : (stryCov_9fa48("123"), `${field} applies to ${other} deployments only; this deployment's source is ${source}`)))));
  }
};

/** Read-only fields sent with a value, unless it repeats the stored one (so a fetched deployment can be sent back). */
export const readOnlyIssues = stryMutAct_9fa48("124") ? () => undefined : (stryCov_9fa48("124"), (() => {
  const readOnlyIssues = (source: Source, parts: ConfigParts, current?: ConfigParts): Array<ValidationIssue> => stryMutAct_9fa48("125") ? eachField(readOnlyFields[source]).map(({
    group,
    field
  }) => issue(fieldLoc(group, field), `${field} is read-only for ${source} deployments`)) : (stryCov_9fa48("125"), eachField(readOnlyFields[source]).filter(({
    group,
    field
  }) => {
    if (stryMutAct_9fa48("126")) {
      {}
    } else {
      stryCov_9fa48("126");
      const sent = fieldValue(parts, group, field);
      return stryMutAct_9fa48("129") ? isSet(sent) || !(current && sameValue(sent, fieldValue(current, group, field))) : stryMutAct_9fa48("128") ? false : stryMutAct_9fa48("127") ? true : (stryCov_9fa48("127", "128", "129"), isSet(sent) && (stryMutAct_9fa48("130") ? current && sameValue(sent, fieldValue(current, group, field)) : (stryCov_9fa48("130"), !(stryMutAct_9fa48("133") ? current || sameValue(sent, fieldValue(current, group, field)) : stryMutAct_9fa48("132") ? false : stryMutAct_9fa48("131") ? true : (stryCov_9fa48("131", "132", "133"), current && sameValue(sent, fieldValue(current, group, field)))))));
    }
  }).map(stryMutAct_9fa48("134") ? () => undefined : (stryCov_9fa48("134"), ({
    group,
    field
  }) => issue(fieldLoc(group, field), stryMutAct_9fa48("135") ? `` : (stryCov_9fa48("135"), `${field} is read-only for ${source} deployments`)))));
  return readOnlyIssues;
})());
export const missingIssues = stryMutAct_9fa48("136") ? () => undefined : (stryCov_9fa48("136"), (() => {
  const missingIssues = (source: Source, parts: ConfigParts): Array<ValidationIssue> => stryMutAct_9fa48("137") ? eachField(requiredFields[source]).map(({
    group,
    field
  }) => issue(fieldLoc(group, field), "Field required", "missing")) : (stryCov_9fa48("137"), eachField(requiredFields[source]).filter(stryMutAct_9fa48("138") ? () => undefined : (stryCov_9fa48("138"), ({
    group,
    field
  }) => stryMutAct_9fa48("139") ? isSet(fieldValue(parts, group, field)) : (stryCov_9fa48("139"), !isSet(fieldValue(parts, group, field))))).map(stryMutAct_9fa48("140") ? () => undefined : (stryCov_9fa48("140"), ({
    group,
    field
  }) => issue(fieldLoc(group, field), stryMutAct_9fa48("141") ? "" : (stryCov_9fa48("141"), "Field required"), stryMutAct_9fa48("142") ? "" : (stryCov_9fa48("142"), "missing")))));
  return missingIssues;
})());

// ---------------------------------------------------------------------------------------------
// Cross-field rules

export const isTagRef = stryMutAct_9fa48("143") ? () => undefined : (stryCov_9fa48("143"), (() => {
  const isTagRef = (ref: string | null | undefined): boolean => stryMutAct_9fa48("146") ? isSet(ref) || ref.startsWith("refs/tags/") : stryMutAct_9fa48("145") ? false : stryMutAct_9fa48("144") ? true : (stryCov_9fa48("144", "145", "146"), isSet(ref) && (stryMutAct_9fa48("147") ? ref.endsWith("refs/tags/") : (stryCov_9fa48("147"), ref.startsWith(stryMutAct_9fa48("148") ? "" : (stryCov_9fa48("148"), "refs/tags/")))));
  return isTagRef;
})());

/**
 * A tag never moves, so building on push to it makes no sense (spec 2.2, 8). Checked on the
 * result of the request merged with what is stored; reported at `build_on_push` when this
 * request sent it, else at the `repo_ref` that made the combination invalid.
 */
export const tagBuildOnPushIssues = (merged: {
  readonly buildOnPush: boolean | null | undefined;
  readonly repoRef: string | null | undefined;
}, sent: ConfigParts): Array<ValidationIssue> => {
  if (stryMutAct_9fa48("149")) {
    {}
  } else {
    stryCov_9fa48("149");
    if (stryMutAct_9fa48("152") ? false : stryMutAct_9fa48("151") ? true : stryMutAct_9fa48("150") ? merged.buildOnPush === true && isTagRef(merged.repoRef) : (stryCov_9fa48("150", "151", "152"), !(stryMutAct_9fa48("155") ? merged.buildOnPush === true || isTagRef(merged.repoRef) : stryMutAct_9fa48("154") ? false : stryMutAct_9fa48("153") ? true : (stryCov_9fa48("153", "154", "155"), (stryMutAct_9fa48("157") ? merged.buildOnPush !== true : stryMutAct_9fa48("156") ? true : (stryCov_9fa48("156", "157"), merged.buildOnPush === (stryMutAct_9fa48("158") ? false : (stryCov_9fa48("158"), true)))) && isTagRef(merged.repoRef))))) return stryMutAct_9fa48("159") ? ["Stryker was here"] : (stryCov_9fa48("159"), []);
    const loc = isSet(stryMutAct_9fa48("160") ? sent.source_config.build_on_push : (stryCov_9fa48("160"), sent.source_config?.build_on_push)) ? fieldLoc(stryMutAct_9fa48("161") ? "" : (stryCov_9fa48("161"), "source_config"), stryMutAct_9fa48("162") ? "" : (stryCov_9fa48("162"), "build_on_push")) : fieldLoc(stryMutAct_9fa48("163") ? "" : (stryCov_9fa48("163"), "source_revision_config"), stryMutAct_9fa48("164") ? "" : (stryCov_9fa48("164"), "repo_ref"));
    return stryMutAct_9fa48("165") ? [] : (stryCov_9fa48("165"), [issue(loc, stryMutAct_9fa48("166") ? `` : (stryCov_9fa48("166"), `build_on_push must be false when repo_ref is a tag (${merged.repoRef})`))]);
  }
};

/** `listener_config` says where to deploy on a listener, so it means nothing without one. */
export const listenerConfigIssues = stryMutAct_9fa48("167") ? () => undefined : (stryCov_9fa48("167"), (() => {
  const listenerConfigIssues = (config: SourceConfig | null | undefined): Array<ValidationIssue> => (stryMutAct_9fa48("170") ? isSet(config?.listener_config) || !isSet(config.listener_id) : stryMutAct_9fa48("169") ? false : stryMutAct_9fa48("168") ? true : (stryCov_9fa48("168", "169", "170"), isSet(stryMutAct_9fa48("171") ? config.listener_config : (stryCov_9fa48("171"), config?.listener_config)) && (stryMutAct_9fa48("172") ? isSet(config.listener_id) : (stryCov_9fa48("172"), !isSet(config.listener_id))))) ? stryMutAct_9fa48("173") ? [] : (stryCov_9fa48("173"), [issue(fieldLoc(stryMutAct_9fa48("174") ? "" : (stryCov_9fa48("174"), "source_config"), stryMutAct_9fa48("175") ? "" : (stryCov_9fa48("175"), "listener_config")), stryMutAct_9fa48("176") ? "" : (stryCov_9fa48("176"), "listener_config requires listener_id"))]) : stryMutAct_9fa48("177") ? ["Stryker was here"] : (stryCov_9fa48("177"), []);
  return listenerConfigIssues;
})());

/**
 * The checks that need the listener named by `listener_id` (the server looks it up, in the
 * caller's tenant): it must exist, and the namespace must be one it serves.
 */
export const listenerIssues = (config: SourceConfig | null | undefined, listener: Listener | undefined): Array<ValidationIssue> => {
  if (stryMutAct_9fa48("178")) {
    {}
  } else {
    stryCov_9fa48("178");
    if (stryMutAct_9fa48("181") ? false : stryMutAct_9fa48("180") ? true : stryMutAct_9fa48("179") ? isSet(config?.listener_id) : (stryCov_9fa48("179", "180", "181"), !isSet(stryMutAct_9fa48("182") ? config.listener_id : (stryCov_9fa48("182"), config?.listener_id)))) return stryMutAct_9fa48("183") ? ["Stryker was here"] : (stryCov_9fa48("183"), []);
    if (stryMutAct_9fa48("186") ? false : stryMutAct_9fa48("185") ? true : stryMutAct_9fa48("184") ? listener : (stryCov_9fa48("184", "185", "186"), !listener)) return stryMutAct_9fa48("187") ? [] : (stryCov_9fa48("187"), [issue(fieldLoc(stryMutAct_9fa48("188") ? "" : (stryCov_9fa48("188"), "source_config"), stryMutAct_9fa48("189") ? "" : (stryCov_9fa48("189"), "listener_id")), stryMutAct_9fa48("190") ? `` : (stryCov_9fa48("190"), `Listener ${config.listener_id} not found`))]);
    const namespace = stryMutAct_9fa48("191") ? config.listener_config.k8s_namespace : (stryCov_9fa48("191"), config.listener_config?.k8s_namespace);
    const served = listener.compute_config.k8s_namespaces;
    return (stryMutAct_9fa48("194") ? isSet(namespace) || !served.includes(namespace) : stryMutAct_9fa48("193") ? false : stryMutAct_9fa48("192") ? true : (stryCov_9fa48("192", "193", "194"), isSet(namespace) && (stryMutAct_9fa48("195") ? served.includes(namespace) : (stryCov_9fa48("195"), !served.includes(namespace))))) ? stryMutAct_9fa48("196") ? [] : (stryCov_9fa48("196"), [issue(stryMutAct_9fa48("197") ? [] : (stryCov_9fa48("197"), [...fieldLoc(stryMutAct_9fa48("198") ? "" : (stryCov_9fa48("198"), "source_config"), stryMutAct_9fa48("199") ? "" : (stryCov_9fa48("199"), "listener_config")), stryMutAct_9fa48("200") ? "" : (stryCov_9fa48("200"), "k8s_namespace")]), stryMutAct_9fa48("201") ? `` : (stryCov_9fa48("201"), `Namespace '${namespace}' is not served by listener ${listener.id} (namespaces: ${served.join(stryMutAct_9fa48("202") ? "" : (stryCov_9fa48("202"), ", "))})`))]) : stryMutAct_9fa48("203") ? ["Stryker was here"] : (stryCov_9fa48("203"), []);
  }
};

/**
 * Secrets are write-only, so a client that fetched a deployment holds masked values. A masked
 * value for a secret that exists means "keep its value"; for any other name it is an error
 * rather than silently storing the mask as the value.
 */
export const resolveSecrets = (incoming: ReadonlyArray<Secret>, current: ReadonlyArray<Secret>): {
  readonly secrets: Array<Secret>;
  readonly issues: Array<ValidationIssue>;
} => {
  if (stryMutAct_9fa48("204")) {
    {}
  } else {
    stryCov_9fa48("204");
    const stored = new Map(current.map(stryMutAct_9fa48("205") ? () => undefined : (stryCov_9fa48("205"), secret => stryMutAct_9fa48("206") ? [] : (stryCov_9fa48("206"), [secret.name, secret.value]))));
    const issues: Array<ValidationIssue> = stryMutAct_9fa48("207") ? ["Stryker was here"] : (stryCov_9fa48("207"), []);
    const secrets = incoming.map((secret, index) => {
      if (stryMutAct_9fa48("208")) {
        {}
      } else {
        stryCov_9fa48("208");
        if (stryMutAct_9fa48("211") ? secret.value === secretMask : stryMutAct_9fa48("210") ? false : stryMutAct_9fa48("209") ? true : (stryCov_9fa48("209", "210", "211"), secret.value !== secretMask)) return secret;
        const kept = stored.get(secret.name);
        if (stryMutAct_9fa48("214") ? kept !== undefined : stryMutAct_9fa48("213") ? false : stryMutAct_9fa48("212") ? true : (stryCov_9fa48("212", "213", "214"), kept === undefined)) {
          if (stryMutAct_9fa48("215")) {
            {}
          } else {
            stryCov_9fa48("215");
            issues.push(issue(stryMutAct_9fa48("217") ? [] : (stryCov_9fa48("217"), [...bodyLoc, stryMutAct_9fa48("218") ? "" : (stryCov_9fa48("218"), "secrets"), index, stryMutAct_9fa48("219") ? "" : (stryCov_9fa48("219"), "value")]), stryMutAct_9fa48("220") ? `` : (stryCov_9fa48("220"), `${secretMask} is how responses mask secret values; send the real value of new secret '${secret.name}'`)));
            return secret;
          }
        }
        return stryMutAct_9fa48("221") ? {} : (stryCov_9fa48("221"), {
          name: secret.name,
          value: kept
        });
      }
    });
    return stryMutAct_9fa48("222") ? {} : (stryCov_9fa48("222"), {
      secrets,
      issues
    });
  }
};

// ---------------------------------------------------------------------------------------------
// Normal forms: every key present, null when not set

const sourceConfigKeys = Object.keys(SourceConfig.fields) as Array<SourceConfigField>;
const sourceRevisionConfigKeys = Object.keys(SourceRevisionConfig.fields) as Array<SourceRevisionConfigField>;
const complete = <K extends string,>(keys: ReadonlyArray<K>, value: object | null | undefined): { [P in K]: unknown } => {
  if (stryMutAct_9fa48("223")) {
    {}
  } else {
    stryCov_9fa48("223");
    const given = value as Record<string, unknown> | null | undefined;
    const out = {} as { [P in K]: unknown };
    for (const key of keys) out[key] = stryMutAct_9fa48("224") ? given?.[key] && null : (stryCov_9fa48("224"), (stryMutAct_9fa48("225") ? given[key] : (stryCov_9fa48("225"), given?.[key])) ?? null);
    return out;
  }
};
export const fullSourceConfig = stryMutAct_9fa48("226") ? () => undefined : (stryCov_9fa48("226"), (() => {
  const fullSourceConfig = (config: SourceConfig | null | undefined): SourceConfig => complete(sourceConfigKeys, config) as SourceConfig;
  return fullSourceConfig;
})());
export const fullSourceRevisionConfig = stryMutAct_9fa48("227") ? () => undefined : (stryCov_9fa48("227"), (() => {
  const fullSourceRevisionConfig = (config: SourceRevisionConfig | null | undefined): SourceRevisionConfig => complete(sourceRevisionConfigKeys, config) as SourceRevisionConfig;
  return fullSourceRevisionConfig;
})());

/** Stored values overridden by every field the request set. A resource_spec is one value, so it is replaced whole. */
const overlay = <A extends object,>(stored: A, sent: A | null | undefined): A => {
  if (stryMutAct_9fa48("228")) {
    {}
  } else {
    stryCov_9fa48("228");
    const merged: Record<string, unknown> = stryMutAct_9fa48("229") ? {} : (stryCov_9fa48("229"), {
      ...(stored as Record<string, unknown>)
    });
    for (const [key, value] of Object.entries(stryMutAct_9fa48("230") ? sent && {} : (stryCov_9fa48("230"), sent ?? {}))) if (stryMutAct_9fa48("232") ? false : stryMutAct_9fa48("231") ? true : (stryCov_9fa48("231", "232"), isSet(value))) merged[key] = value;
    return merged as A;
  }
};

// ---------------------------------------------------------------------------------------------
// Create

/** `custom_url` of a gitrepo deployment: generated from the public base URL, never chosen by the caller. */
export const gitrepoCustomUrl = stryMutAct_9fa48("233") ? () => undefined : (stryCov_9fa48("233"), (() => {
  const gitrepoCustomUrl = (publicUrl: string, name: string): string => stryMutAct_9fa48("234") ? `` : (stryCov_9fa48("234"), `${publicUrl.replace(stryMutAct_9fa48("236") ? /\/$/ : stryMutAct_9fa48("235") ? /\/+/ : (stryCov_9fa48("235", "236"), /\/+$/), stryMutAct_9fa48("237") ? "Stryker was here!" : (stryCov_9fa48("237"), ""))}/d/${name}`);
  return gitrepoCustomUrl;
})());
export interface CreateOptions {
  /** `SLIPWAY_PUBLIC_URL`, the base of generated custom URLs. */
  readonly publicUrl: string;
}

/**
 * Validates a decoded `POST /v2/deployments` body against the source rules and returns what to
 * store. Name uniqueness (409) and the listener lookup (`listenerIssues`) need the database and
 * are the server's.
 */
export const planCreate = (body: CreateDeployment, options: CreateOptions): Result.Result<NewDeployment, ValidationError> => {
  if (stryMutAct_9fa48("238")) {
    {}
  } else {
    stryCov_9fa48("238");
    const {
      source
    } = body;
    const resolved = resolveSecrets(stryMutAct_9fa48("239") ? body.secrets && [] : (stryCov_9fa48("239"), body.secrets ?? (stryMutAct_9fa48("240") ? ["Stryker was here"] : (stryCov_9fa48("240"), []))), stryMutAct_9fa48("241") ? ["Stryker was here"] : (stryCov_9fa48("241"), []));
    const issues = stryMutAct_9fa48("242") ? [] : (stryCov_9fa48("242"), [...wrongSourceIssues(source, body), ...readOnlyIssues(source, body), ...missingIssues(source, body), ...listenerConfigIssues(body.source_config), ...tagBuildOnPushIssues(stryMutAct_9fa48("243") ? {} : (stryCov_9fa48("243"), {
      buildOnPush: stryMutAct_9fa48("244") ? body.source_config.build_on_push : (stryCov_9fa48("244"), body.source_config?.build_on_push),
      repoRef: stryMutAct_9fa48("245") ? body.source_revision_config.repo_ref : (stryCov_9fa48("245"), body.source_revision_config?.repo_ref)
    }), body), ...resolved.issues]);
    return toResult(issues, () => {
      if (stryMutAct_9fa48("246")) {
        {}
      } else {
        stryCov_9fa48("246");
        const sourceConfig = fullSourceConfig(body.source_config);
        return stryMutAct_9fa48("247") ? {} : (stryCov_9fa48("247"), {
          name: body.name,
          source,
          source_config: (stryMutAct_9fa48("250") ? source !== "gitrepo" : stryMutAct_9fa48("249") ? false : stryMutAct_9fa48("248") ? true : (stryCov_9fa48("248", "249", "250"), source === (stryMutAct_9fa48("251") ? "" : (stryCov_9fa48("251"), "gitrepo")))) ? stryMutAct_9fa48("252") ? {} : (stryCov_9fa48("252"), {
            ...sourceConfig,
            custom_url: gitrepoCustomUrl(options.publicUrl, body.name)
          }) : sourceConfig,
          source_revision_config: fullSourceRevisionConfig(body.source_revision_config),
          secrets: resolved.secrets,
          image_version: stryMutAct_9fa48("253") ? body.image_version && null : (stryCov_9fa48("253"), body.image_version ?? null)
        });
      }
    });
  }
};

// ---------------------------------------------------------------------------------------------
// PATCH and new revisions

/** The PATCH fields that create a revision when non-null (spec section 3), and only those. */
export const revisionTriggerFields = ["source_revision_config.repo_ref", "source_revision_config.graph_config_path", "source_revision_config.image_uri", "secrets", "source_config.resource_spec"] as const;
export type RevisionTrigger = typeof revisionTriggerFields[number];
export const revisionTriggers = (patch: PatchDeployment): Array<RevisionTrigger> => {
  if (stryMutAct_9fa48("254")) {
    {}
  } else {
    stryCov_9fa48("254");
    const sent: Record<RevisionTrigger, unknown> = stryMutAct_9fa48("255") ? {} : (stryCov_9fa48("255"), {
      "source_revision_config.repo_ref": stryMutAct_9fa48("256") ? patch.source_revision_config.repo_ref : (stryCov_9fa48("256"), patch.source_revision_config?.repo_ref),
      "source_revision_config.graph_config_path": stryMutAct_9fa48("257") ? patch.source_revision_config.graph_config_path : (stryCov_9fa48("257"), patch.source_revision_config?.graph_config_path),
      "source_revision_config.image_uri": stryMutAct_9fa48("258") ? patch.source_revision_config.image_uri : (stryCov_9fa48("258"), patch.source_revision_config?.image_uri),
      secrets: patch.secrets,
      "source_config.resource_spec": stryMutAct_9fa48("259") ? patch.source_config.resource_spec : (stryCov_9fa48("259"), patch.source_config?.resource_spec)
    });
    return stryMutAct_9fa48("260") ? revisionTriggerFields : (stryCov_9fa48("260"), revisionTriggerFields.filter(stryMutAct_9fa48("261") ? () => undefined : (stryCov_9fa48("261"), field => isSet(sent[field]))));
  }
};
export interface PatchPlan {
  /** The deployment's new source_config (stored merged with the request; complete). */
  readonly source_config: SourceConfig;
  readonly image_version: string | null;
  /** The one revision to create, or null when only in-place fields changed. */
  readonly newRevision: NewRevision | null;
  /** Why a revision is created (empty when none is). */
  readonly revisionTriggers: ReadonlyArray<RevisionTrigger>;
}

/** Sent immutable fields whose value differs from the stored one. */
export const immutableIssues = (current: StoredDeployment, patch: PatchDeployment): Array<ValidationIssue> => {
  if (stryMutAct_9fa48("262")) {
    {}
  } else {
    stryCov_9fa48("262");
    const topLevel = stryMutAct_9fa48("263") ? (["name", "source"] as const).map(field => issue([...bodyLoc, field], `${field} cannot be changed after creation (it is '${current[field]}')`, "frozen_field")) : (stryCov_9fa48("263"), (["name", "source"] as const).filter(stryMutAct_9fa48("264") ? () => undefined : (stryCov_9fa48("264"), field => stryMutAct_9fa48("267") ? isSet(patch[field]) || patch[field] !== current[field] : stryMutAct_9fa48("266") ? false : stryMutAct_9fa48("265") ? true : (stryCov_9fa48("265", "266", "267"), isSet(patch[field]) && (stryMutAct_9fa48("269") ? patch[field] === current[field] : stryMutAct_9fa48("268") ? true : (stryCov_9fa48("268", "269"), patch[field] !== current[field]))))).map(stryMutAct_9fa48("270") ? () => undefined : (stryCov_9fa48("270"), field => issue(stryMutAct_9fa48("271") ? [] : (stryCov_9fa48("271"), [...bodyLoc, field]), stryMutAct_9fa48("272") ? `` : (stryCov_9fa48("272"), `${field} cannot be changed after creation (it is '${current[field]}')`), stryMutAct_9fa48("273") ? "" : (stryCov_9fa48("273"), "frozen_field")))));
    // A field of the other source is already reported by wrongSourceIssues: say it once.
    const ownFields = stryMutAct_9fa48("274") ? immutableSourceConfigFields : (stryCov_9fa48("274"), immutableSourceConfigFields.filter(stryMutAct_9fa48("275") ? () => undefined : (stryCov_9fa48("275"), field => stryMutAct_9fa48("276") ? sourceOnlyFields[otherSource(current.source)].source_config.includes(field) : (stryCov_9fa48("276"), !sourceOnlyFields[otherSource(current.source)].source_config.includes(field)))));
    const nested = stryMutAct_9fa48("277") ? ownFields.map(field => issue(fieldLoc("source_config", field), `${field} cannot be changed after creation`, "frozen_field")) : (stryCov_9fa48("277"), ownFields.filter(stryMutAct_9fa48("278") ? () => undefined : (stryCov_9fa48("278"), field => stryMutAct_9fa48("281") ? isSet(patch.source_config?.[field]) || !sameValue(patch.source_config?.[field], current.source_config[field]) : stryMutAct_9fa48("280") ? false : stryMutAct_9fa48("279") ? true : (stryCov_9fa48("279", "280", "281"), isSet(stryMutAct_9fa48("282") ? patch.source_config[field] : (stryCov_9fa48("282"), patch.source_config?.[field])) && (stryMutAct_9fa48("283") ? sameValue(patch.source_config?.[field], current.source_config[field]) : (stryCov_9fa48("283"), !sameValue(stryMutAct_9fa48("284") ? patch.source_config[field] : (stryCov_9fa48("284"), patch.source_config?.[field]), current.source_config[field])))))).map(stryMutAct_9fa48("285") ? () => undefined : (stryCov_9fa48("285"), field => issue(fieldLoc(stryMutAct_9fa48("286") ? "" : (stryCov_9fa48("286"), "source_config"), field), stryMutAct_9fa48("287") ? `` : (stryCov_9fa48("287"), `${field} cannot be changed after creation`), stryMutAct_9fa48("288") ? "" : (stryCov_9fa48("288"), "frozen_field")))));
    return stryMutAct_9fa48("289") ? [] : (stryCov_9fa48("289"), [...topLevel, ...nested]);
  }
};

/** The revision config a new revision gets: the latest one's values overridden by the request's. Its commit is not known yet. */
const nextRevisionConfig = stryMutAct_9fa48("290") ? () => undefined : (stryCov_9fa48("290"), (() => {
  const nextRevisionConfig = (current: SourceRevisionConfig, sent: SourceRevisionConfig | null | undefined): SourceRevisionConfig => stryMutAct_9fa48("291") ? {} : (stryCov_9fa48("291"), {
    ...fullSourceRevisionConfig(overlay(current, sent)),
    repo_commit_sha: null
  });
  return nextRevisionConfig;
})());

/**
 * Plans a `PATCH /v2/deployments/{id}`: validates the body (decoded with `PatchDeployment`)
 * against the stored deployment and answers what to write. The source rules apply to the patch
 * as on create; immutable fields may repeat their value; the tag rule is checked on the merged
 * result; exactly the spec's trigger fields create one new revision, which starts from the
 * latest revision's values.
 */
export const planPatch = (current: StoredDeployment, patch: PatchDeployment): Result.Result<PatchPlan, ValidationError> => {
  if (stryMutAct_9fa48("292")) {
    {}
  } else {
    stryCov_9fa48("292");
    const {
      source
    } = current;
    const sourceConfig = fullSourceConfig(overlay(fullSourceConfig(current.source_config), patch.source_config));
    const revisionConfig = overlay(fullSourceRevisionConfig(current.source_revision_config), patch.source_revision_config);
    const resolved = isSet(patch.secrets) ? resolveSecrets(patch.secrets, current.secrets) : stryMutAct_9fa48("293") ? {} : (stryCov_9fa48("293"), {
      secrets: stryMutAct_9fa48("294") ? [] : (stryCov_9fa48("294"), [...current.secrets]),
      issues: stryMutAct_9fa48("295") ? ["Stryker was here"] : (stryCov_9fa48("295"), [])
    });
    const issues = stryMutAct_9fa48("296") ? [] : (stryCov_9fa48("296"), [...wrongSourceIssues(source, patch), ...immutableIssues(current, patch), ...readOnlyIssues(source, patch, current), ...tagBuildOnPushIssues(stryMutAct_9fa48("297") ? {} : (stryCov_9fa48("297"), {
      buildOnPush: sourceConfig.build_on_push,
      repoRef: revisionConfig.repo_ref
    }), patch), ...resolved.issues]);
    return toResult(issues, () => {
      if (stryMutAct_9fa48("298")) {
        {}
      } else {
        stryCov_9fa48("298");
        const triggers = revisionTriggers(patch);
        return stryMutAct_9fa48("299") ? {} : (stryCov_9fa48("299"), {
          source_config: sourceConfig,
          image_version: stryMutAct_9fa48("300") ? (patch.image_version ?? current.image_version) && null : (stryCov_9fa48("300"), (stryMutAct_9fa48("301") ? patch.image_version && current.image_version : (stryCov_9fa48("301"), patch.image_version ?? current.image_version)) ?? null),
          newRevision: (stryMutAct_9fa48("304") ? triggers.length !== 0 : stryMutAct_9fa48("303") ? false : stryMutAct_9fa48("302") ? true : (stryCov_9fa48("302", "303", "304"), triggers.length === 0)) ? null : stryMutAct_9fa48("305") ? {} : (stryCov_9fa48("305"), {
            source_revision_config: nextRevisionConfig(current.source_revision_config, patch.source_revision_config),
            secrets: resolved.secrets
          }),
          revisionTriggers: triggers
        });
      }
    });
  }
};

/**
 * Plans `POST /v2/deployments/{id}/revisions`: unlike PATCH it always creates a revision, from the
 * latest revision's values overridden by the body's, with the body's secrets (or the current ones).
 */
export const planRevision = (current: StoredDeployment, body: CreateRevision): Result.Result<NewRevision, ValidationError> => {
  if (stryMutAct_9fa48("306")) {
    {}
  } else {
    stryCov_9fa48("306");
    const {
      source
    } = current;
    const revisionConfig = nextRevisionConfig(current.source_revision_config, body.source_revision_config);
    const resolved = isSet(body.secrets) ? resolveSecrets(body.secrets, current.secrets) : stryMutAct_9fa48("307") ? {} : (stryCov_9fa48("307"), {
      secrets: stryMutAct_9fa48("308") ? [] : (stryCov_9fa48("308"), [...current.secrets]),
      issues: stryMutAct_9fa48("309") ? ["Stryker was here"] : (stryCov_9fa48("309"), [])
    });
    const issues = stryMutAct_9fa48("310") ? [] : (stryCov_9fa48("310"), [...wrongSourceIssues(source, body), ...readOnlyIssues(source, body, current), ...tagBuildOnPushIssues(stryMutAct_9fa48("311") ? {} : (stryCov_9fa48("311"), {
      buildOnPush: current.source_config.build_on_push,
      repoRef: revisionConfig.repo_ref
    }), body), ...resolved.issues]);
    return toResult(issues, stryMutAct_9fa48("312") ? () => undefined : (stryCov_9fa48("312"), () => stryMutAct_9fa48("313") ? {} : (stryCov_9fa48("313"), {
      source_revision_config: revisionConfig,
      secrets: resolved.secrets
    })));
  }
};

// ---------------------------------------------------------------------------------------------
// Push webhook

/** One spelling for a repository: `host/owner/name`, lowercase, whatever URL form it came in. */
export const normalizeRepo = stryMutAct_9fa48("314") ? () => undefined : (stryCov_9fa48("314"), (() => {
  const normalizeRepo = (url: string): string => stryMutAct_9fa48("316") ? url.toLowerCase().replace(/^git@([^:]+):/, "$1/").replace(/^[a-z+]+:\/\//, "").replace(/^[^@/]+@/, "").replace(/^www\./, "").replace(/\/+$/, "").replace(/\.git$/, "") : stryMutAct_9fa48("315") ? url.trim().toUpperCase().replace(/^git@([^:]+):/, "$1/").replace(/^[a-z+]+:\/\//, "").replace(/^[^@/]+@/, "").replace(/^www\./, "").replace(/\/+$/, "").replace(/\.git$/, "") : (stryCov_9fa48("315", "316"), url.trim().toLowerCase().replace(stryMutAct_9fa48("319") ? /^git@([:]+):/ : stryMutAct_9fa48("318") ? /^git@([^:]):/ : stryMutAct_9fa48("317") ? /git@([^:]+):/ : (stryCov_9fa48("317", "318", "319"), /^git@([^:]+):/), stryMutAct_9fa48("320") ? "" : (stryCov_9fa48("320"), "$1/")).replace(stryMutAct_9fa48("323") ? /^[^a-z+]+:\/\// : stryMutAct_9fa48("322") ? /^[a-z+]:\/\// : stryMutAct_9fa48("321") ? /[a-z+]+:\/\// : (stryCov_9fa48("321", "322", "323"), /^[a-z+]+:\/\//), stryMutAct_9fa48("324") ? "Stryker was here!" : (stryCov_9fa48("324"), "")).replace(stryMutAct_9fa48("327") ? /^[@/]+@/ : stryMutAct_9fa48("326") ? /^[^@/]@/ : stryMutAct_9fa48("325") ? /[^@/]+@/ : (stryCov_9fa48("325", "326", "327"), /^[^@/]+@/), stryMutAct_9fa48("328") ? "Stryker was here!" : (stryCov_9fa48("328"), "")).replace(stryMutAct_9fa48("329") ? /www\./ : (stryCov_9fa48("329"), /^www\./), stryMutAct_9fa48("330") ? "Stryker was here!" : (stryCov_9fa48("330"), "")).replace(stryMutAct_9fa48("332") ? /\/$/ : stryMutAct_9fa48("331") ? /\/+/ : (stryCov_9fa48("331", "332"), /\/+$/), stryMutAct_9fa48("333") ? "Stryker was here!" : (stryCov_9fa48("333"), "")).replace(stryMutAct_9fa48("334") ? /\.git/ : (stryCov_9fa48("334"), /\.git$/), stryMutAct_9fa48("335") ? "Stryker was here!" : (stryCov_9fa48("335"), "")));
  return normalizeRepo;
})());
const pushedRepoMatches = (repoUrl: string, push: PushEvent): boolean => {
  if (stryMutAct_9fa48("336")) {
    {}
  } else {
    stryCov_9fa48("336");
    const repo = normalizeRepo(repoUrl);
    const {
      clone_url,
      html_url,
      full_name
    } = push.repository;
    return stryMutAct_9fa48("339") ? (repo === normalizeRepo(clone_url) || repo === normalizeRepo(html_url)) && repo.endsWith(`/${full_name.toLowerCase()}`) : stryMutAct_9fa48("338") ? false : stryMutAct_9fa48("337") ? true : (stryCov_9fa48("337", "338", "339"), (stryMutAct_9fa48("341") ? repo === normalizeRepo(clone_url) && repo === normalizeRepo(html_url) : stryMutAct_9fa48("340") ? false : (stryCov_9fa48("340", "341"), (stryMutAct_9fa48("343") ? repo !== normalizeRepo(clone_url) : stryMutAct_9fa48("342") ? false : (stryCov_9fa48("342", "343"), repo === normalizeRepo(clone_url))) || (stryMutAct_9fa48("345") ? repo !== normalizeRepo(html_url) : stryMutAct_9fa48("344") ? false : (stryCov_9fa48("344", "345"), repo === normalizeRepo(html_url))))) || (stryMutAct_9fa48("346") ? repo.startsWith(`/${full_name.toLowerCase()}`) : (stryCov_9fa48("346"), repo.endsWith(stryMutAct_9fa48("347") ? `` : (stryCov_9fa48("347"), `/${stryMutAct_9fa48("348") ? full_name.toUpperCase() : (stryCov_9fa48("348"), full_name.toLowerCase())}`)))));
  }
};

/**
 * A branch is configured by its bare name (spec 2.3) or as `refs/heads/<name>`; a push names
 * its full ref. A tag never matches: tags cannot build on push.
 */
const pushedRefMatches = (repoRef: string, pushedRef: string): boolean => {
  if (stryMutAct_9fa48("349")) {
    {}
  } else {
    stryCov_9fa48("349");
    const branch = branchOf(repoRef);
    return stryMutAct_9fa48("352") ? branch !== null || pushedRef === `refs/heads/${branch}` : stryMutAct_9fa48("351") ? false : stryMutAct_9fa48("350") ? true : (stryCov_9fa48("350", "351", "352"), (stryMutAct_9fa48("354") ? branch === null : stryMutAct_9fa48("353") ? true : (stryCov_9fa48("353", "354"), branch !== null)) && (stryMutAct_9fa48("356") ? pushedRef !== `refs/heads/${branch}` : stryMutAct_9fa48("355") ? true : (stryCov_9fa48("355", "356"), pushedRef === (stryMutAct_9fa48("357") ? `` : (stryCov_9fa48("357"), `refs/heads/${branch}`)))));
  }
};
const isDeletion = stryMutAct_9fa48("358") ? () => undefined : (stryCov_9fa48("358"), (() => {
  const isDeletion = (push: PushEvent): boolean => stryMutAct_9fa48("361") ? push.deleted === true && /^0+$/.test(push.after) : stryMutAct_9fa48("360") ? false : stryMutAct_9fa48("359") ? true : (stryCov_9fa48("359", "360", "361"), (stryMutAct_9fa48("363") ? push.deleted !== true : stryMutAct_9fa48("362") ? false : (stryCov_9fa48("362", "363"), push.deleted === (stryMutAct_9fa48("364") ? false : (stryCov_9fa48("364"), true)))) || (stryMutAct_9fa48("367") ? /^0$/ : stryMutAct_9fa48("366") ? /^0+/ : stryMutAct_9fa48("365") ? /0+$/ : (stryCov_9fa48("365", "366", "367"), /^0+$/)).test(push.after));
  return isDeletion;
})());

/** Whether a push builds this deployment: gitrepo, build_on_push on, same repository, same ref, not a branch deletion. */
export const pushTriggersBuild = (deployment: StoredDeployment, push: PushEvent): boolean => {
  if (stryMutAct_9fa48("368")) {
    {}
  } else {
    stryCov_9fa48("368");
    const {
      repo_url,
      build_on_push
    } = deployment.source_config;
    const {
      repo_ref
    } = deployment.source_revision_config;
    return stryMutAct_9fa48("371") ? deployment.source === "gitrepo" && build_on_push === true && isSet(repo_url) && isSet(repo_ref) && !isDeletion(push) && pushedRepoMatches(repo_url, push) || pushedRefMatches(repo_ref, push.ref) : stryMutAct_9fa48("370") ? false : stryMutAct_9fa48("369") ? true : (stryCov_9fa48("369", "370", "371"), (stryMutAct_9fa48("373") ? deployment.source === "gitrepo" && build_on_push === true && isSet(repo_url) && isSet(repo_ref) && !isDeletion(push) || pushedRepoMatches(repo_url, push) : stryMutAct_9fa48("372") ? true : (stryCov_9fa48("372", "373"), (stryMutAct_9fa48("375") ? deployment.source === "gitrepo" && build_on_push === true && isSet(repo_url) && isSet(repo_ref) || !isDeletion(push) : stryMutAct_9fa48("374") ? true : (stryCov_9fa48("374", "375"), (stryMutAct_9fa48("377") ? deployment.source === "gitrepo" && build_on_push === true && isSet(repo_url) || isSet(repo_ref) : stryMutAct_9fa48("376") ? true : (stryCov_9fa48("376", "377"), (stryMutAct_9fa48("379") ? deployment.source === "gitrepo" && build_on_push === true || isSet(repo_url) : stryMutAct_9fa48("378") ? true : (stryCov_9fa48("378", "379"), (stryMutAct_9fa48("381") ? deployment.source === "gitrepo" || build_on_push === true : stryMutAct_9fa48("380") ? true : (stryCov_9fa48("380", "381"), (stryMutAct_9fa48("383") ? deployment.source !== "gitrepo" : stryMutAct_9fa48("382") ? true : (stryCov_9fa48("382", "383"), deployment.source === (stryMutAct_9fa48("384") ? "" : (stryCov_9fa48("384"), "gitrepo")))) && (stryMutAct_9fa48("386") ? build_on_push !== true : stryMutAct_9fa48("385") ? true : (stryCov_9fa48("385", "386"), build_on_push === (stryMutAct_9fa48("387") ? false : (stryCov_9fa48("387"), true)))))) && isSet(repo_url))) && isSet(repo_ref))) && (stryMutAct_9fa48("388") ? isDeletion(push) : (stryCov_9fa48("388"), !isDeletion(push))))) && pushedRepoMatches(repo_url, push))) && pushedRefMatches(repo_ref, push.ref));
  }
};

/** The revision a push creates for a deployment it triggers, pinned to the pushed commit; null when it triggers none. */
export const revisionForPush = stryMutAct_9fa48("389") ? () => undefined : (stryCov_9fa48("389"), (() => {
  const revisionForPush = (deployment: StoredDeployment, push: PushEvent): NewRevision | null => pushTriggersBuild(deployment, push) ? stryMutAct_9fa48("390") ? {} : (stryCov_9fa48("390"), {
    source_revision_config: stryMutAct_9fa48("391") ? {} : (stryCov_9fa48("391"), {
      ...nextRevisionConfig(deployment.source_revision_config, null),
      repo_commit_sha: push.after
    }),
    secrets: deployment.secrets
  }) : null;
  return revisionForPush;
})());

// ---------------------------------------------------------------------------------------------
// Redeploy

/** What the redeploy rule needs to know of a revision. */
export interface RevisionRecord {
  readonly id: string;
  readonly deployment_id: string;
  readonly status: RevisionStatus;
  /** When the revision first reached DEPLOYED; null if it never did. */
  readonly deployed_at: string | null;
}
export interface RedeployRequest {
  readonly deployment: {
    readonly id: string;
    readonly deleting: boolean;
  };
  readonly revisionId: string;
  /** The revision looked up by id in the caller's tenant, or undefined if none. */
  readonly revision: RevisionRecord | undefined;
}

/**
 * `POST .../revisions/{revision_id}/redeploy` is allowed for a revision of this deployment that
 * reached DEPLOYED at some point (its image exists and once ran); it then becomes the active
 * revision (`activate` in revision.ts). An unknown deployment is the server's 404; everything
 * else refused here is a 400 with a string detail (design.md section 5).
 */
export const checkRedeploy = ({
  deployment,
  revisionId,
  revision
}: RedeployRequest): Result.Result<RevisionRecord, BadRequest> => {
  if (stryMutAct_9fa48("392")) {
    {}
  } else {
    stryCov_9fa48("392");
    if (stryMutAct_9fa48("394") ? false : stryMutAct_9fa48("393") ? true : (stryCov_9fa48("393", "394"), deployment.deleting)) return Result.fail(new BadRequest(stryMutAct_9fa48("395") ? {} : (stryCov_9fa48("395"), {
      message: stryMutAct_9fa48("396") ? `` : (stryCov_9fa48("396"), `Deployment ${deployment.id} is being deleted`)
    })));
    if (stryMutAct_9fa48("399") ? !revision && revision.deployment_id !== deployment.id : stryMutAct_9fa48("398") ? false : stryMutAct_9fa48("397") ? true : (stryCov_9fa48("397", "398", "399"), (stryMutAct_9fa48("400") ? revision : (stryCov_9fa48("400"), !revision)) || (stryMutAct_9fa48("402") ? revision.deployment_id === deployment.id : stryMutAct_9fa48("401") ? false : (stryCov_9fa48("401", "402"), revision.deployment_id !== deployment.id)))) {
      if (stryMutAct_9fa48("403")) {
        {}
      } else {
        stryCov_9fa48("403");
        return Result.fail(new BadRequest(stryMutAct_9fa48("404") ? {} : (stryCov_9fa48("404"), {
          message: stryMutAct_9fa48("405") ? `` : (stryCov_9fa48("405"), `Revision ${revisionId} not found in deployment ${deployment.id}`)
        })));
      }
    }
    if (stryMutAct_9fa48("408") ? false : stryMutAct_9fa48("407") ? true : stryMutAct_9fa48("406") ? everDeployed(revision) : (stryCov_9fa48("406", "407", "408"), !everDeployed(revision))) {
      if (stryMutAct_9fa48("409")) {
        {}
      } else {
        stryCov_9fa48("409");
        return Result.fail(new BadRequest(stryMutAct_9fa48("410") ? {} : (stryCov_9fa48("410"), {
          message: stryMutAct_9fa48("411") ? `` : (stryCov_9fa48("411"), `Revision ${revisionId} cannot be redeployed: it has never been deployed (status ${revision.status})`)
        })));
      }
    }
    return Result.succeed(revision);
  }
};