/**
 * Decisions of the sandbox area that span resources (quota, in-use checks, pool scaling),
 * as pure functions: the server reads the facts inside its transaction, asks here, and
 * applies the answer. Failures are the tagged errors of core/api/errors.ts, so the one error
 * mapper turns them into the spec's bodies.
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
import { QuotaExceeded, ResizeError, ResourceInUse, SandboxValidationError, TemplateNotFound, ValidationError } from "../api/errors.ts";
import { add, compare, formatQuantity, isZero, subtract } from "./quantity.ts";
import type { Quantity } from "./quantity.ts";

/** The success of a check that has nothing to return. */
const pass: Result.Result<void, never> = Result.succeed(undefined);

/** "1 sandbox", "2 sandboxes", "1 pool", "3 pools". */
export const countOf = stryMutAct_9fa48("0") ? () => undefined : (stryCov_9fa48("0"), (() => {
  const countOf = (count: number, singular: string, plural = stryMutAct_9fa48("1") ? `` : (stryCov_9fa48("1"), `${singular}s`)): string => stryMutAct_9fa48("2") ? `` : (stryCov_9fa48("2"), `${count} ${(stryMutAct_9fa48("5") ? count !== 1 : stryMutAct_9fa48("4") ? false : stryMutAct_9fa48("3") ? true : (stryCov_9fa48("3", "4", "5"), count === 1)) ? singular : plural}`);
  return countOf;
})());

// ---------------------------------------------------------------------------------------------
// Storage quota and volume sizes

/**
 * Fails when adding `increase` to the organization's current usage would pass its quota.
 * The error carries canonical texts so its message reads like the spec's
 * ("limit 100Gi, current usage 95Gi, requested increase 10Gi").
 */
export const checkQuota = stryMutAct_9fa48("6") ? () => undefined : (stryCov_9fa48("6"), (() => {
  const checkQuota = (increase: Quantity, orgUsage: Quantity, quota: Quantity): Result.Result<void, QuotaExceeded> => (stryMutAct_9fa48("10") ? compare(add(orgUsage, increase), quota) <= 0 : stryMutAct_9fa48("9") ? compare(add(orgUsage, increase), quota) >= 0 : stryMutAct_9fa48("8") ? false : stryMutAct_9fa48("7") ? true : (stryCov_9fa48("7", "8", "9", "10"), compare(add(orgUsage, increase), quota) > 0)) ? Result.fail(new QuotaExceeded(stryMutAct_9fa48("11") ? {} : (stryCov_9fa48("11"), {
    limit: formatQuantity(quota),
    usage: formatQuantity(orgUsage),
    requested: formatQuantity(increase)
  }))) : pass;
  return checkQuota;
})());

/** A new volume of `size` is an increase of its whole size. */
export const checkVolumeCreate = stryMutAct_9fa48("12") ? () => undefined : (stryCov_9fa48("12"), (() => {
  const checkVolumeCreate = (size: Quantity, orgUsage: Quantity, quota: Quantity): Result.Result<void, QuotaExceeded> => checkQuota(size, orgUsage, quota);
  return checkVolumeCreate;
})());
export interface VolumeResize {
  /** The size to store (the requested one). */
  readonly size: Quantity;
  /** How much the organization's usage grows; zero when the size is unchanged. */
  readonly increase: Quantity;
}

/**
 * A volume may only grow (a filesystem cannot be shrunk under its data), and growth counts
 * against the quota. `orgUsage` is the organization's usage including this volume's current
 * size; an unchanged size always succeeds, even when the organization is already over quota.
 */
export const planVolumeResize = (volume: {
  readonly name: string;
  readonly size: Quantity;
}, requested: Quantity, orgUsage: Quantity, quota: Quantity): Result.Result<VolumeResize, ResizeError | QuotaExceeded> => {
  if (stryMutAct_9fa48("13")) {
    {}
  } else {
    stryCov_9fa48("13");
    if (stryMutAct_9fa48("17") ? compare(requested, volume.size) >= 0 : stryMutAct_9fa48("16") ? compare(requested, volume.size) <= 0 : stryMutAct_9fa48("15") ? false : stryMutAct_9fa48("14") ? true : (stryCov_9fa48("14", "15", "16", "17"), compare(requested, volume.size) < 0)) {
      if (stryMutAct_9fa48("18")) {
        {}
      } else {
        stryCov_9fa48("18");
        return Result.fail(new ResizeError(stryMutAct_9fa48("19") ? {} : (stryCov_9fa48("19"), {
          message: stryMutAct_9fa48("20") ? `` : (stryCov_9fa48("20"), `cannot shrink volume ${volume.name} from ${formatQuantity(volume.size)} to ${formatQuantity(requested)}`)
        })));
      }
    }
    const increase = subtract(requested, volume.size);
    if (stryMutAct_9fa48("22") ? false : stryMutAct_9fa48("21") ? true : (stryCov_9fa48("21", "22"), isZero(increase))) return Result.succeed(stryMutAct_9fa48("23") ? {} : (stryCov_9fa48("23"), {
      size: requested,
      increase
    }));
    return Result.map(checkQuota(increase, orgUsage, quota), stryMutAct_9fa48("24") ? () => undefined : (stryCov_9fa48("24"), () => stryMutAct_9fa48("25") ? {} : (stryCov_9fa48("25"), {
      size: requested,
      increase
    })));
  }
};

// ---------------------------------------------------------------------------------------------
// Storage classes

export const defaultStorageClass = stryMutAct_9fa48("26") ? "" : (stryCov_9fa48("26"), "standard");

/**
 * The class a new volume gets: the requested one when the server allows it, otherwise a 422
 * at `body.storage_class` listing the allowed ones. Omitted → "standard", or the first allowed
 * class when an operator removed "standard" (so omitting it never fails).
 */
export const resolveStorageClass = (requested: string | undefined, allowed: ReadonlyArray<string>): Result.Result<string, ValidationError> => {
  if (stryMutAct_9fa48("27")) {
    {}
  } else {
    stryCov_9fa48("27");
    if (stryMutAct_9fa48("30") ? requested !== undefined : stryMutAct_9fa48("29") ? false : stryMutAct_9fa48("28") ? true : (stryCov_9fa48("28", "29", "30"), requested === undefined)) return Result.succeed((stryMutAct_9fa48("33") ? allowed.includes(defaultStorageClass) && allowed.length === 0 : stryMutAct_9fa48("32") ? false : stryMutAct_9fa48("31") ? true : (stryCov_9fa48("31", "32", "33"), allowed.includes(defaultStorageClass) || (stryMutAct_9fa48("35") ? allowed.length !== 0 : stryMutAct_9fa48("34") ? false : (stryCov_9fa48("34", "35"), allowed.length === 0)))) ? defaultStorageClass : allowed[0]!);
    if (stryMutAct_9fa48("37") ? false : stryMutAct_9fa48("36") ? true : (stryCov_9fa48("36", "37"), allowed.includes(requested))) return Result.succeed(requested);
    const quoted = allowed.map(stryMutAct_9fa48("38") ? () => undefined : (stryCov_9fa48("38"), name => stryMutAct_9fa48("39") ? `` : (stryCov_9fa48("39"), `'${name}'`)));
    const expected = (stryMutAct_9fa48("43") ? quoted.length > 1 : stryMutAct_9fa48("42") ? quoted.length < 1 : stryMutAct_9fa48("41") ? false : stryMutAct_9fa48("40") ? true : (stryCov_9fa48("40", "41", "42", "43"), quoted.length <= 1)) ? stryMutAct_9fa48("44") ? quoted[0] && "a configured storage class" : (stryCov_9fa48("44"), quoted[0] ?? (stryMutAct_9fa48("45") ? "" : (stryCov_9fa48("45"), "a configured storage class"))) : stryMutAct_9fa48("46") ? `` : (stryCov_9fa48("46"), `${stryMutAct_9fa48("47") ? quoted.join(", ") : (stryCov_9fa48("47"), quoted.slice(0, stryMutAct_9fa48("48") ? +1 : (stryCov_9fa48("48"), -1)).join(stryMutAct_9fa48("49") ? "" : (stryCov_9fa48("49"), ", ")))} or ${quoted[stryMutAct_9fa48("50") ? quoted.length + 1 : (stryCov_9fa48("50"), quoted.length - 1)]}`);
    return Result.fail(ValidationError.single(stryMutAct_9fa48("51") ? [] : (stryCov_9fa48("51"), [stryMutAct_9fa48("52") ? "" : (stryCov_9fa48("52"), "body"), stryMutAct_9fa48("53") ? "" : (stryCov_9fa48("53"), "storage_class")]), stryMutAct_9fa48("54") ? `` : (stryCov_9fa48("54"), `Input should be ${expected}`), stryMutAct_9fa48("55") ? "" : (stryCov_9fa48("55"), "enum")));
  }
};

// ---------------------------------------------------------------------------------------------
// Deleting what is still used

/** A template used by sandboxes or pools cannot go: they would lose what they are built from. */
export const checkTemplateDeletable = (name: string, sandboxCount: number, poolCount: number): Result.Result<void, ResourceInUse> => {
  if (stryMutAct_9fa48("56")) {
    {}
  } else {
    stryCov_9fa48("56");
    const users = stryMutAct_9fa48("57") ? [] : (stryCov_9fa48("57"), [...((stryMutAct_9fa48("61") ? sandboxCount <= 0 : stryMutAct_9fa48("60") ? sandboxCount >= 0 : stryMutAct_9fa48("59") ? false : stryMutAct_9fa48("58") ? true : (stryCov_9fa48("58", "59", "60", "61"), sandboxCount > 0)) ? stryMutAct_9fa48("62") ? [] : (stryCov_9fa48("62"), [countOf(sandboxCount, stryMutAct_9fa48("63") ? "" : (stryCov_9fa48("63"), "sandbox"), stryMutAct_9fa48("64") ? "" : (stryCov_9fa48("64"), "sandboxes"))]) : stryMutAct_9fa48("65") ? ["Stryker was here"] : (stryCov_9fa48("65"), [])), ...((stryMutAct_9fa48("69") ? poolCount <= 0 : stryMutAct_9fa48("68") ? poolCount >= 0 : stryMutAct_9fa48("67") ? false : stryMutAct_9fa48("66") ? true : (stryCov_9fa48("66", "67", "68", "69"), poolCount > 0)) ? stryMutAct_9fa48("70") ? [] : (stryCov_9fa48("70"), [countOf(poolCount, stryMutAct_9fa48("71") ? "" : (stryCov_9fa48("71"), "pool"))]) : stryMutAct_9fa48("72") ? ["Stryker was here"] : (stryCov_9fa48("72"), []))]);
    return (stryMutAct_9fa48("75") ? users.length !== 0 : stryMutAct_9fa48("74") ? false : stryMutAct_9fa48("73") ? true : (stryCov_9fa48("73", "74", "75"), users.length === 0)) ? pass : Result.fail(new ResourceInUse(stryMutAct_9fa48("76") ? {} : (stryCov_9fa48("76"), {
      message: stryMutAct_9fa48("77") ? `` : (stryCov_9fa48("77"), `template ${name} is used by ${users.join(stryMutAct_9fa48("78") ? "" : (stryCov_9fa48("78"), " and "))}`)
    })));
  }
};

/** A volume mounted by a template cannot go: sandboxes built from it would fail to start. */
export const checkVolumeDeletable = stryMutAct_9fa48("79") ? () => undefined : (stryCov_9fa48("79"), (() => {
  const checkVolumeDeletable = (name: string, mountingTemplates: ReadonlyArray<string>): Result.Result<void, ResourceInUse> => (stryMutAct_9fa48("82") ? mountingTemplates.length !== 0 : stryMutAct_9fa48("81") ? false : stryMutAct_9fa48("80") ? true : (stryCov_9fa48("80", "81", "82"), mountingTemplates.length === 0)) ? pass : Result.fail(new ResourceInUse(stryMutAct_9fa48("83") ? {} : (stryCov_9fa48("83"), {
    message: stryMutAct_9fa48("84") ? `` : (stryCov_9fa48("84"), `volume ${name} is mounted by ${countOf(mountingTemplates.length, stryMutAct_9fa48("85") ? "" : (stryCov_9fa48("85"), "template"))} (${mountingTemplates.join(stryMutAct_9fa48("86") ? "" : (stryCov_9fa48("86"), ", "))})`)
  })));
  return checkVolumeDeletable;
})());

// ---------------------------------------------------------------------------------------------
// Templates referenced by boxes, pools and templates

export interface TemplateVolumes {
  readonly volume_mounts: ReadonlyArray<{
    readonly volume_name: string;
  }>;
}

/** A sandbox needs an existing template; an unknown one is a 400 `TemplateNotFound`. */
export const checkBoxTemplate = stryMutAct_9fa48("87") ? () => undefined : (stryCov_9fa48("87"), (() => {
  const checkBoxTemplate = <T,>(templateName: string, template: T | undefined): Result.Result<T, TemplateNotFound> => (stryMutAct_9fa48("90") ? template !== undefined : stryMutAct_9fa48("89") ? false : stryMutAct_9fa48("88") ? true : (stryCov_9fa48("88", "89", "90"), template === undefined)) ? Result.fail(new TemplateNotFound(stryMutAct_9fa48("91") ? {} : (stryCov_9fa48("91"), {
    message: stryMutAct_9fa48("92") ? `` : (stryCov_9fa48("92"), `template ${templateName} not found`)
  }))) : Result.succeed(template);
  return checkBoxTemplate;
})());

/**
 * A pool needs an existing template that mounts no volumes: a volume attaches to one sandbox,
 * and a pool makes many identical sandboxes from the template.
 */
export const checkPoolTemplate = stryMutAct_9fa48("93") ? () => undefined : (stryCov_9fa48("93"), (() => {
  const checkPoolTemplate = <T extends TemplateVolumes,>(templateName: string, template: T | undefined): Result.Result<T, TemplateNotFound | SandboxValidationError> => Result.flatMap(checkBoxTemplate(templateName, template), stryMutAct_9fa48("94") ? () => undefined : (stryCov_9fa48("94"), found => (stryMutAct_9fa48("97") ? found.volume_mounts.length !== 0 : stryMutAct_9fa48("96") ? false : stryMutAct_9fa48("95") ? true : (stryCov_9fa48("95", "96", "97"), found.volume_mounts.length === 0)) ? Result.succeed(found) : Result.fail(new SandboxValidationError(stryMutAct_9fa48("98") ? {} : (stryCov_9fa48("98"), {
    message: stryMutAct_9fa48("99") ? `` : (stryCov_9fa48("99"), `template ${templateName} mounts volumes (${found.volume_mounts.map(stryMutAct_9fa48("100") ? () => undefined : (stryCov_9fa48("100"), mount => mount.volume_name)).join(stryMutAct_9fa48("101") ? "" : (stryCov_9fa48("101"), ", "))}) and cannot be used by a pool: a volume attaches to a single sandbox`)
  })))));
  return checkPoolTemplate;
})());

/** A template may only mount volumes that exist; the first missing one is named. */
export const checkTemplateVolumes = (mounts: ReadonlyArray<{
  readonly volume_name: string;
}>, existingVolumes: ReadonlyArray<string>): Result.Result<void, SandboxValidationError> => {
  if (stryMutAct_9fa48("102")) {
    {}
  } else {
    stryCov_9fa48("102");
    const missing = mounts.find(stryMutAct_9fa48("103") ? () => undefined : (stryCov_9fa48("103"), mount => stryMutAct_9fa48("104") ? existingVolumes.includes(mount.volume_name) : (stryCov_9fa48("104"), !existingVolumes.includes(mount.volume_name))));
    return (stryMutAct_9fa48("107") ? missing !== undefined : stryMutAct_9fa48("106") ? false : stryMutAct_9fa48("105") ? true : (stryCov_9fa48("105", "106", "107"), missing === undefined)) ? pass : Result.fail(new SandboxValidationError(stryMutAct_9fa48("108") ? {} : (stryCov_9fa48("108"), {
      message: stryMutAct_9fa48("109") ? `` : (stryCov_9fa48("109"), `volume ${missing.volume_name} not found`)
    })));
  }
};

// ---------------------------------------------------------------------------------------------
// Pools

export interface PoolScalePlan {
  /** How many sandboxes to create. */
  readonly create: number;
  /** Which sandboxes to delete, newest first. */
  readonly remove: ReadonlyArray<string>;
}

/**
 * Brings a pool to `replicas` sandboxes. `currentBoxNames` lists the pool's sandboxes oldest
 * first; scaling down removes the newest, since the oldest are the likeliest to be warm and in use.
 */
export const planPoolScale = stryMutAct_9fa48("110") ? () => undefined : (stryCov_9fa48("110"), (() => {
  const planPoolScale = (currentBoxNames: ReadonlyArray<string>, replicas: number): PoolScalePlan => stryMutAct_9fa48("111") ? {} : (stryCov_9fa48("111"), {
    create: stryMutAct_9fa48("112") ? Math.min(0, replicas - currentBoxNames.length) : (stryCov_9fa48("112"), Math.max(0, stryMutAct_9fa48("113") ? replicas + currentBoxNames.length : (stryCov_9fa48("113"), replicas - currentBoxNames.length))),
    remove: stryMutAct_9fa48("115") ? currentBoxNames.reverse() : stryMutAct_9fa48("114") ? currentBoxNames.slice(Math.max(0, replicas)) : (stryCov_9fa48("114", "115"), currentBoxNames.slice(stryMutAct_9fa48("116") ? Math.min(0, replicas) : (stryCov_9fa48("116"), Math.max(0, replicas))).reverse())
  });
  return planPoolScale;
})());

/** The sandboxes deleted together with a pool: exactly those it created. */
export const planPoolDeletion = stryMutAct_9fa48("117") ? () => undefined : (stryCov_9fa48("117"), (() => {
  const planPoolDeletion = <B extends {
    readonly pool_name: string | null;
  },>(pool: {
    readonly name: string;
  }, boxes: ReadonlyArray<B>): ReadonlyArray<B> => stryMutAct_9fa48("118") ? boxes : (stryCov_9fa48("118"), boxes.filter(stryMutAct_9fa48("119") ? () => undefined : (stryCov_9fa48("119"), box => stryMutAct_9fa48("122") ? box.pool_name !== pool.name : stryMutAct_9fa48("121") ? false : stryMutAct_9fa48("120") ? true : (stryCov_9fa48("120", "121", "122"), box.pool_name === pool.name))));
  return planPoolDeletion;
})());