/**
 * The resource spec's defaults (spec 2.5) and the ordering rules between its fields. Pure, so the
 * runtime renders exactly what the property tests check: explicit values always win, and every
 * unset limit is twice its (effective) request.
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
import type { PathIssue, ResourceSpec } from "./model.ts";
type NumericField = { [K in keyof ResourceSpec]-?: NonNullable<ResourceSpec[K]> extends number ? K : never }[keyof ResourceSpec];
interface Derivation {
  readonly field: NumericField;
  readonly from: NumericField;
  readonly factor: 1 | 2;
}

/**
 * Unset fields and where their default comes from, in the order they must be applied:
 * `queue_cpu` is derived before `queue_cpu_limit`, which doubles the effective `queue_cpu`.
 */
export const derivations: ReadonlyArray<Derivation> = stryMutAct_9fa48("0") ? [] : (stryCov_9fa48("0"), [stryMutAct_9fa48("1") ? {} : (stryCov_9fa48("1"), {
  field: stryMutAct_9fa48("2") ? "" : (stryCov_9fa48("2"), "cpu_limit"),
  from: stryMutAct_9fa48("3") ? "" : (stryCov_9fa48("3"), "cpu"),
  factor: 2
}), stryMutAct_9fa48("4") ? {} : (stryCov_9fa48("4"), {
  field: stryMutAct_9fa48("5") ? "" : (stryCov_9fa48("5"), "memory_limit_mb"),
  from: stryMutAct_9fa48("6") ? "" : (stryCov_9fa48("6"), "memory_mb"),
  factor: 2
}), stryMutAct_9fa48("7") ? {} : (stryCov_9fa48("7"), {
  field: stryMutAct_9fa48("8") ? "" : (stryCov_9fa48("8"), "queue_min_scale"),
  from: stryMutAct_9fa48("9") ? "" : (stryCov_9fa48("9"), "min_scale"),
  factor: 1
}), stryMutAct_9fa48("10") ? {} : (stryCov_9fa48("10"), {
  field: stryMutAct_9fa48("11") ? "" : (stryCov_9fa48("11"), "queue_max_scale"),
  from: stryMutAct_9fa48("12") ? "" : (stryCov_9fa48("12"), "max_scale"),
  factor: 1
}), stryMutAct_9fa48("13") ? {} : (stryCov_9fa48("13"), {
  field: stryMutAct_9fa48("14") ? "" : (stryCov_9fa48("14"), "queue_cpu"),
  from: stryMutAct_9fa48("15") ? "" : (stryCov_9fa48("15"), "cpu"),
  factor: 1
}), stryMutAct_9fa48("16") ? {} : (stryCov_9fa48("16"), {
  field: stryMutAct_9fa48("17") ? "" : (stryCov_9fa48("17"), "queue_cpu_limit"),
  from: stryMutAct_9fa48("18") ? "" : (stryCov_9fa48("18"), "queue_cpu"),
  factor: 2
}), stryMutAct_9fa48("19") ? {} : (stryCov_9fa48("19"), {
  field: stryMutAct_9fa48("20") ? "" : (stryCov_9fa48("20"), "queue_memory_mb"),
  from: stryMutAct_9fa48("21") ? "" : (stryCov_9fa48("21"), "memory_mb"),
  factor: 1
}), stryMutAct_9fa48("22") ? {} : (stryCov_9fa48("22"), {
  field: stryMutAct_9fa48("23") ? "" : (stryCov_9fa48("23"), "queue_memory_limit_mb"),
  from: stryMutAct_9fa48("24") ? "" : (stryCov_9fa48("24"), "queue_memory_mb"),
  factor: 2
}), stryMutAct_9fa48("25") ? {} : (stryCov_9fa48("25"), {
  field: stryMutAct_9fa48("26") ? "" : (stryCov_9fa48("26"), "db_cpu_limit"),
  from: stryMutAct_9fa48("27") ? "" : (stryCov_9fa48("27"), "db_cpu"),
  factor: 2
}), stryMutAct_9fa48("28") ? {} : (stryCov_9fa48("28"), {
  field: stryMutAct_9fa48("29") ? "" : (stryCov_9fa48("29"), "db_memory_limit_mb"),
  from: stryMutAct_9fa48("30") ? "" : (stryCov_9fa48("30"), "db_memory_mb"),
  factor: 2
})]);
const isSet = stryMutAct_9fa48("31") ? () => undefined : (stryCov_9fa48("31"), (() => {
  const isSet = (value: unknown): value is number => stryMutAct_9fa48("34") ? typeof value !== "number" : stryMutAct_9fa48("33") ? false : stryMutAct_9fa48("32") ? true : (stryCov_9fa48("32", "33", "34"), typeof value === (stryMutAct_9fa48("35") ? "" : (stryCov_9fa48("35"), "number")));
  return isSet;
})());

/**
 * The spec with every derivable default filled in. Fields whose source is unset stay unset:
 * the runtime applies its own platform defaults there, not us.
 */
export const effectiveResourceSpec = (spec: ResourceSpec | null | undefined): ResourceSpec => {
  if (stryMutAct_9fa48("36")) {
    {}
  } else {
    stryCov_9fa48("36");
    const effective: Record<string, unknown> = stryMutAct_9fa48("37") ? {} : (stryCov_9fa48("37"), {
      ...spec
    });
    for (const {
      field,
      from,
      factor
    } of derivations) {
      if (stryMutAct_9fa48("38")) {
        {}
      } else {
        stryCov_9fa48("38");
        const source = effective[from];
        if (stryMutAct_9fa48("41") ? !isSet(effective[field]) || isSet(source) : stryMutAct_9fa48("40") ? false : stryMutAct_9fa48("39") ? true : (stryCov_9fa48("39", "40", "41"), (stryMutAct_9fa48("42") ? isSet(effective[field]) : (stryCov_9fa48("42"), !isSet(effective[field]))) && isSet(source))) effective[field] = stryMutAct_9fa48("43") ? source / factor : (stryCov_9fa48("43"), source * factor);
      }
    }
    return effective as ResourceSpec;
  }
};

/** Two fields where the first may not exceed the second. */
const orderedPairs: ReadonlyArray<readonly [NumericField, NumericField]> = stryMutAct_9fa48("44") ? [] : (stryCov_9fa48("44"), [stryMutAct_9fa48("45") ? [] : (stryCov_9fa48("45"), [stryMutAct_9fa48("46") ? "" : (stryCov_9fa48("46"), "min_scale"), stryMutAct_9fa48("47") ? "" : (stryCov_9fa48("47"), "max_scale")]), stryMutAct_9fa48("48") ? [] : (stryCov_9fa48("48"), [stryMutAct_9fa48("49") ? "" : (stryCov_9fa48("49"), "queue_min_scale"), stryMutAct_9fa48("50") ? "" : (stryCov_9fa48("50"), "queue_max_scale")]), stryMutAct_9fa48("51") ? [] : (stryCov_9fa48("51"), [stryMutAct_9fa48("52") ? "" : (stryCov_9fa48("52"), "orchestrator_min_scale"), stryMutAct_9fa48("53") ? "" : (stryCov_9fa48("53"), "orchestrator_max_scale")]), stryMutAct_9fa48("54") ? [] : (stryCov_9fa48("54"), [stryMutAct_9fa48("55") ? "" : (stryCov_9fa48("55"), "cpu"), stryMutAct_9fa48("56") ? "" : (stryCov_9fa48("56"), "cpu_limit")]), stryMutAct_9fa48("57") ? [] : (stryCov_9fa48("57"), [stryMutAct_9fa48("58") ? "" : (stryCov_9fa48("58"), "memory_mb"), stryMutAct_9fa48("59") ? "" : (stryCov_9fa48("59"), "memory_limit_mb")]), stryMutAct_9fa48("60") ? [] : (stryCov_9fa48("60"), [stryMutAct_9fa48("61") ? "" : (stryCov_9fa48("61"), "queue_cpu"), stryMutAct_9fa48("62") ? "" : (stryCov_9fa48("62"), "queue_cpu_limit")]), stryMutAct_9fa48("63") ? [] : (stryCov_9fa48("63"), [stryMutAct_9fa48("64") ? "" : (stryCov_9fa48("64"), "queue_memory_mb"), stryMutAct_9fa48("65") ? "" : (stryCov_9fa48("65"), "queue_memory_limit_mb")]), stryMutAct_9fa48("66") ? [] : (stryCov_9fa48("66"), [stryMutAct_9fa48("67") ? "" : (stryCov_9fa48("67"), "orchestrator_cpu"), stryMutAct_9fa48("68") ? "" : (stryCov_9fa48("68"), "orchestrator_cpu_limit")]), stryMutAct_9fa48("69") ? [] : (stryCov_9fa48("69"), [stryMutAct_9fa48("70") ? "" : (stryCov_9fa48("70"), "orchestrator_memory_mb"), stryMutAct_9fa48("71") ? "" : (stryCov_9fa48("71"), "orchestrator_memory_limit_mb")]), stryMutAct_9fa48("72") ? [] : (stryCov_9fa48("72"), [stryMutAct_9fa48("73") ? "" : (stryCov_9fa48("73"), "executor_cpu"), stryMutAct_9fa48("74") ? "" : (stryCov_9fa48("74"), "executor_cpu_limit")]), stryMutAct_9fa48("75") ? [] : (stryCov_9fa48("75"), [stryMutAct_9fa48("76") ? "" : (stryCov_9fa48("76"), "executor_memory_mb"), stryMutAct_9fa48("77") ? "" : (stryCov_9fa48("77"), "executor_memory_limit_mb")]), stryMutAct_9fa48("78") ? [] : (stryCov_9fa48("78"), [stryMutAct_9fa48("79") ? "" : (stryCov_9fa48("79"), "db_cpu"), stryMutAct_9fa48("80") ? "" : (stryCov_9fa48("80"), "db_cpu_limit")]), stryMutAct_9fa48("81") ? [] : (stryCov_9fa48("81"), [stryMutAct_9fa48("82") ? "" : (stryCov_9fa48("82"), "db_memory_mb"), stryMutAct_9fa48("83") ? "" : (stryCov_9fa48("83"), "db_memory_limit_mb")])]);
const describe = (spec: ResourceSpec, field: NumericField, value: number): string => {
  if (stryMutAct_9fa48("84")) {
    {}
  } else {
    stryCov_9fa48("84");
    if (stryMutAct_9fa48("86") ? false : stryMutAct_9fa48("85") ? true : (stryCov_9fa48("85", "86"), isSet(spec[field]))) return stryMutAct_9fa48("87") ? `` : (stryCov_9fa48("87"), `${field} (${value})`);
    const origin = derivations.find(stryMutAct_9fa48("88") ? () => undefined : (stryCov_9fa48("88"), derivation => stryMutAct_9fa48("91") ? derivation.field !== field : stryMutAct_9fa48("90") ? false : stryMutAct_9fa48("89") ? true : (stryCov_9fa48("89", "90", "91"), derivation.field === field)));
    return stryMutAct_9fa48("92") ? `` : (stryCov_9fa48("92"), `${field} (${value}, defaulted from ${stryMutAct_9fa48("93") ? origin.from : (stryCov_9fa48("93"), origin?.from)})`);
  }
};

/**
 * min ≤ max for each scale pair and request ≤ limit for each resource, checked on the effective
 * values so an explicit `queue_cpu_limit` below an inherited `queue_cpu` is caught too. A pair is
 * reported only when the caller set one of its fields (otherwise the pair it inherits from already
 * reports it), at the upper field when that one was set, else at the lower one.
 */
export const resourceSpecIssues = (spec: ResourceSpec): Array<PathIssue> => {
  if (stryMutAct_9fa48("94")) {
    {}
  } else {
    stryCov_9fa48("94");
    const effective = effectiveResourceSpec(spec);
    return orderedPairs.flatMap(([lower, upper]): Array<PathIssue> => {
      if (stryMutAct_9fa48("95")) {
        {}
      } else {
        stryCov_9fa48("95");
        const low = effective[lower];
        const high = effective[upper];
        if (stryMutAct_9fa48("98") ? (!isSet(low) || !isSet(high)) && low <= high : stryMutAct_9fa48("97") ? false : stryMutAct_9fa48("96") ? true : (stryCov_9fa48("96", "97", "98"), (stryMutAct_9fa48("100") ? !isSet(low) && !isSet(high) : stryMutAct_9fa48("99") ? false : (stryCov_9fa48("99", "100"), (stryMutAct_9fa48("101") ? isSet(low) : (stryCov_9fa48("101"), !isSet(low))) || (stryMutAct_9fa48("102") ? isSet(high) : (stryCov_9fa48("102"), !isSet(high))))) || (stryMutAct_9fa48("105") ? low > high : stryMutAct_9fa48("104") ? low < high : stryMutAct_9fa48("103") ? false : (stryCov_9fa48("103", "104", "105"), low <= high)))) return stryMutAct_9fa48("106") ? ["Stryker was here"] : (stryCov_9fa48("106"), []);
        if (stryMutAct_9fa48("109") ? !isSet(spec[lower]) || !isSet(spec[upper]) : stryMutAct_9fa48("108") ? false : stryMutAct_9fa48("107") ? true : (stryCov_9fa48("107", "108", "109"), (stryMutAct_9fa48("110") ? isSet(spec[lower]) : (stryCov_9fa48("110"), !isSet(spec[lower]))) && (stryMutAct_9fa48("111") ? isSet(spec[upper]) : (stryCov_9fa48("111"), !isSet(spec[upper]))))) return stryMutAct_9fa48("112") ? ["Stryker was here"] : (stryCov_9fa48("112"), []);
        return stryMutAct_9fa48("113") ? [] : (stryCov_9fa48("113"), [stryMutAct_9fa48("114") ? {} : (stryCov_9fa48("114"), {
          path: stryMutAct_9fa48("115") ? [] : (stryCov_9fa48("115"), [isSet(spec[upper]) ? upper : lower]),
          message: stryMutAct_9fa48("116") ? `` : (stryCov_9fa48("116"), `${describe(spec, upper, high)} must be greater than or equal to ${describe(spec, lower, low)}`)
        })]);
      }
    });
  }
};