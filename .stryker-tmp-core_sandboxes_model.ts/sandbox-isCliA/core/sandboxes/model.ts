/**
 * Wire shapes of the sandbox area (design.md section 7): what the server answers and what it
 * accepts.
 *
 * Responses carry quantities as strings: the server stores each quantity's canonical text next
 * to its exact integer (design.md section 6) and answers that text (`10Gi`, `500m`), so the
 * response schemas need no transformation. Request bodies decode quantities to exact
 * `Quantity` values (quantity.ts) and names to checked DNS labels (names.ts).
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
import { Effect, Schema } from "effect";
import { Timestamp, Uuid } from "../api/common.ts";
import { atLeast, atMost, Int, issueTypeKey, rule, ruleOf } from "../api/validation.ts";
import { imageReferenceProblem } from "../deployments/sourceFields.ts";
import { DnsLabel } from "./names.ts";
import { ProxyConfig, ProxyConfigInput } from "./proxy.ts";
import { CpuQuantity, MemoryQuantity, StorageQuantity, VolumeSize } from "./quantity.ts";

/** Defaults a missing key to an encoded (JSON) value, which then decodes like a sent one. */
const withDefault = stryMutAct_9fa48("0") ? () => undefined : (stryCov_9fa48("0"), (() => {
  const withDefault = <S extends Schema.Top,>(schema: S, value: S["Encoded"]) => Schema.withDecodingDefaultKey<S>(Effect.succeed(value))(schema);
  return withDefault;
})());

// ---------------------------------------------------------------------------------------------
// Shared pieces

export const defaultCpu = stryMutAct_9fa48("1") ? "" : (stryCov_9fa48("1"), "500m");
export const defaultMemory = stryMutAct_9fa48("2") ? "" : (stryCov_9fa48("2"), "512Mi");
export const maxPoolReplicas = 100;
export const maxWaitSeconds = 3600;
export const defaultWaitSeconds = 60;

/** Canonical quantity text as the server prints it (`10Gi`, `1536Mi`, `500m`, `2`). */
const QuantityText = Schema.String.annotate(stryMutAct_9fa48("3") ? {} : (stryCov_9fa48("3"), {
  description: stryMutAct_9fa48("4") ? "" : (stryCov_9fa48("4"), "Kubernetes quantity in canonical form"),
  examples: stryMutAct_9fa48("5") ? [] : (stryCov_9fa48("5"), [stryMutAct_9fa48("6") ? "" : (stryCov_9fa48("6"), "10Gi")])
}));
const AbsolutePath = Schema.String.check(rule(stryMutAct_9fa48("7") ? () => undefined : (stryCov_9fa48("7"), (path: string) => stryMutAct_9fa48("8") ? path.endsWith("/") : (stryCov_9fa48("8"), path.startsWith(stryMutAct_9fa48("9") ? "" : (stryCov_9fa48("9"), "/")))), stryMutAct_9fa48("10") ? "" : (stryCov_9fa48("10"), "must be an absolute path (starting with '/')"), stryMutAct_9fa48("11") ? "" : (stryCov_9fa48("11"), "value_error")),
// Mounting over "/" would hide the image's whole filesystem.
rule(stryMutAct_9fa48("12") ? () => undefined : (stryCov_9fa48("12"), (path: string) => stryMutAct_9fa48("13") ? /^\/+$/.test(path) : (stryCov_9fa48("13"), !(stryMutAct_9fa48("16") ? /^\/$/ : stryMutAct_9fa48("15") ? /^\/+/ : stryMutAct_9fa48("14") ? /\/+$/ : (stryCov_9fa48("14", "15", "16"), /^\/+$/)).test(path))), stryMutAct_9fa48("17") ? "" : (stryCov_9fa48("17"), "must not be the root directory"), stryMutAct_9fa48("18") ? "" : (stryCov_9fa48("18"), "value_error")), rule(stryMutAct_9fa48("19") ? () => undefined : (stryCov_9fa48("19"), (path: string) => stryMutAct_9fa48("20") ? path.split("/").includes("..") : (stryCov_9fa48("20"), !path.split(stryMutAct_9fa48("21") ? "" : (stryCov_9fa48("21"), "/")).includes(stryMutAct_9fa48("22") ? "" : (stryCov_9fa48("22"), "..")))), stryMutAct_9fa48("23") ? "" : (stryCov_9fa48("23"), "must not contain '..' segments"), stryMutAct_9fa48("24") ? "" : (stryCov_9fa48("24"), "value_error")));

/** An OCI image reference, checked as the deployment area checks `image_uri` (sourceFields.ts). */
const Image = Schema.String.annotate(stryMutAct_9fa48("25") ? {} : (stryCov_9fa48("25"), {
  description: stryMutAct_9fa48("26") ? "" : (stryCov_9fa48("26"), "An OCI image reference: [registry[:port]/]repository[:tag][@digest]"),
  examples: stryMutAct_9fa48("27") ? [] : (stryCov_9fa48("27"), [stryMutAct_9fa48("28") ? "" : (stryCov_9fa48("28"), "python:3.12")])
})).check(rule(stryMutAct_9fa48("29") ? () => undefined : (stryCov_9fa48("29"), (image: string) => stryMutAct_9fa48("33") ? image.length < 1 : stryMutAct_9fa48("32") ? image.length > 1 : stryMutAct_9fa48("31") ? false : stryMutAct_9fa48("30") ? true : (stryCov_9fa48("30", "31", "32", "33"), image.length >= 1)), stryMutAct_9fa48("34") ? "" : (stryCov_9fa48("34"), "must be at least 1 character"), stryMutAct_9fa48("35") ? "" : (stryCov_9fa48("35"), "string_too_short")), ruleOf(stryMutAct_9fa48("36") ? () => undefined : (stryCov_9fa48("36"), (image: string) => (stryMutAct_9fa48("39") ? image !== "" : stryMutAct_9fa48("38") ? false : stryMutAct_9fa48("37") ? true : (stryCov_9fa48("37", "38", "39"), image === (stryMutAct_9fa48("40") ? "Stryker was here!" : (stryCov_9fa48("40"), "")))) ? undefined : imageReferenceProblem(image, stryMutAct_9fa48("41") ? "" : (stryCov_9fa48("41"), "image"))), stryMutAct_9fa48("42") ? "" : (stryCov_9fa48("42"), "value_error")));
const Replicas = Int.check(atLeast(0)).check(atMost(maxPoolReplicas));

/** Seconds to wait for readiness when `wait_for_ready` is true. */
const WaitSeconds = Int.check(atLeast(1)).check(atMost(maxWaitSeconds));

/** `wait_for_ready` (default false) and `timeout` (seconds, default 60) of create requests. */
const waitFields = stryMutAct_9fa48("43") ? {} : (stryCov_9fa48("43"), {
  wait_for_ready: withDefault(Schema.Boolean, stryMutAct_9fa48("44") ? true : (stryCov_9fa48("44"), false)),
  timeout: withDefault(WaitSeconds, defaultWaitSeconds)
});

// ---------------------------------------------------------------------------------------------
// Responses

export const VolumeMount = Schema.Struct(stryMutAct_9fa48("45") ? {} : (stryCov_9fa48("45"), {
  volume_name: Schema.String,
  mount_path: Schema.String
})).annotate(stryMutAct_9fa48("46") ? {} : (stryCov_9fa48("46"), {
  identifier: stryMutAct_9fa48("47") ? "" : (stryCov_9fa48("47"), "VolumeMount")
}));
export const TemplateResources = Schema.Struct(stryMutAct_9fa48("48") ? {} : (stryCov_9fa48("48"), {
  cpu: QuantityText,
  memory: QuantityText,
  /** Absent when the template sets no ephemeral storage request. */
  storage: Schema.optionalKey(QuantityText)
})).annotate(stryMutAct_9fa48("49") ? {} : (stryCov_9fa48("49"), {
  identifier: stryMutAct_9fa48("50") ? "" : (stryCov_9fa48("50"), "TemplateResources")
}));
export const Template = Schema.Struct(stryMutAct_9fa48("51") ? {} : (stryCov_9fa48("51"), {
  id: Uuid,
  name: Schema.String,
  image: Schema.String,
  resources: TemplateResources,
  volume_mounts: Schema.Array(VolumeMount),
  proxy_config: ProxyConfig,
  created_at: Timestamp,
  updated_at: Timestamp
})).annotate(stryMutAct_9fa48("52") ? {} : (stryCov_9fa48("52"), {
  identifier: stryMutAct_9fa48("53") ? "" : (stryCov_9fa48("53"), "Template")
}));
export type Template = typeof Template.Type;
export const Volume = Schema.Struct(stryMutAct_9fa48("54") ? {} : (stryCov_9fa48("54"), {
  id: Uuid,
  name: Schema.String,
  size: QuantityText,
  storage_class: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp
})).annotate(stryMutAct_9fa48("55") ? {} : (stryCov_9fa48("55"), {
  identifier: stryMutAct_9fa48("56") ? "" : (stryCov_9fa48("56"), "Volume")
}));
export type Volume = typeof Volume.Type;
export const Pool = Schema.Struct(stryMutAct_9fa48("57") ? {} : (stryCov_9fa48("57"), {
  id: Uuid,
  name: Schema.String,
  template_name: Schema.String,
  replicas: Int,
  created_at: Timestamp,
  updated_at: Timestamp
})).annotate(stryMutAct_9fa48("58") ? {} : (stryCov_9fa48("58"), {
  identifier: stryMutAct_9fa48("59") ? "" : (stryCov_9fa48("59"), "Pool")
}));
export type Pool = typeof Pool.Type;
export const Sandbox = Schema.Struct(stryMutAct_9fa48("60") ? {} : (stryCov_9fa48("60"), {
  id: Uuid,
  name: Schema.String,
  template_name: Schema.String,
  /** The pool that created the sandbox; null for one created directly. */
  pool_name: Schema.NullOr(Schema.String),
  dataplane_url: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp
})).annotate(stryMutAct_9fa48("61") ? {} : (stryCov_9fa48("61"), {
  identifier: stryMutAct_9fa48("62") ? "" : (stryCov_9fa48("62"), "Sandbox")
}));
export type Sandbox = typeof Sandbox.Type;
export const BoxStatusValue = Schema.Literals(stryMutAct_9fa48("63") ? [] : (stryCov_9fa48("63"), [stryMutAct_9fa48("64") ? "" : (stryCov_9fa48("64"), "provisioning"), stryMutAct_9fa48("65") ? "" : (stryCov_9fa48("65"), "ready"), stryMutAct_9fa48("66") ? "" : (stryCov_9fa48("66"), "failed")]));
export type BoxStatusValue = typeof BoxStatusValue.Type;
export const BoxStatus = Schema.Struct(stryMutAct_9fa48("67") ? {} : (stryCov_9fa48("67"), {
  status: BoxStatusValue,
  /** Why the sandbox failed or what it is waiting for; null when there is nothing to say. */
  status_message: Schema.NullOr(Schema.String)
})).annotate(stryMutAct_9fa48("68") ? {} : (stryCov_9fa48("68"), {
  identifier: stryMutAct_9fa48("69") ? "" : (stryCov_9fa48("69"), "BoxStatus")
}));
export type BoxStatus = typeof BoxStatus.Type;
export const TemplateList = Schema.Struct(stryMutAct_9fa48("70") ? {} : (stryCov_9fa48("70"), {
  templates: Schema.Array(Template),
  offset: Int
})).annotate(stryMutAct_9fa48("71") ? {} : (stryCov_9fa48("71"), {
  identifier: stryMutAct_9fa48("72") ? "" : (stryCov_9fa48("72"), "TemplateList")
}));
export const VolumeList = Schema.Struct(stryMutAct_9fa48("73") ? {} : (stryCov_9fa48("73"), {
  volumes: Schema.Array(Volume),
  offset: Int
})).annotate(stryMutAct_9fa48("74") ? {} : (stryCov_9fa48("74"), {
  identifier: stryMutAct_9fa48("75") ? "" : (stryCov_9fa48("75"), "VolumeList")
}));
export const PoolList = Schema.Struct(stryMutAct_9fa48("76") ? {} : (stryCov_9fa48("76"), {
  pools: Schema.Array(Pool),
  offset: Int
})).annotate(stryMutAct_9fa48("77") ? {} : (stryCov_9fa48("77"), {
  identifier: stryMutAct_9fa48("78") ? "" : (stryCov_9fa48("78"), "PoolList")
}));
export const SandboxList = Schema.Struct(stryMutAct_9fa48("79") ? {} : (stryCov_9fa48("79"), {
  sandboxes: Schema.Array(Sandbox),
  offset: Int
})).annotate(stryMutAct_9fa48("80") ? {} : (stryCov_9fa48("80"), {
  identifier: stryMutAct_9fa48("81") ? "" : (stryCov_9fa48("81"), "SandboxList")
}));

// ---------------------------------------------------------------------------------------------
// Requests

export const VolumeMountInput = Schema.Struct(stryMutAct_9fa48("82") ? {} : (stryCov_9fa48("82"), {
  volume_name: DnsLabel,
  mount_path: AbsolutePath
})).annotate(stryMutAct_9fa48("83") ? {} : (stryCov_9fa48("83"), {
  identifier: stryMutAct_9fa48("84") ? "" : (stryCov_9fa48("84"), "VolumeMountInput")
}));

/**
 * Two mounts at one path would shadow each other, and one volume mounted twice is almost
 * certainly a typo; each duplicate is reported at its own index.
 */
const uniqueMounts = Schema.makeFilter<ReadonlyArray<{
  readonly volume_name: string;
  readonly mount_path: string;
}>>(stryMutAct_9fa48("85") ? () => undefined : (stryCov_9fa48("85"), mounts => mounts.flatMap((mount, index) => {
  if (stryMutAct_9fa48("86")) {
    {}
  } else {
    stryCov_9fa48("86");
    const before = stryMutAct_9fa48("87") ? mounts : (stryCov_9fa48("87"), mounts.slice(0, index));
    return stryMutAct_9fa48("88") ? [] : (stryCov_9fa48("88"), [...((stryMutAct_9fa48("89") ? before.every(other => other.mount_path === mount.mount_path) : (stryCov_9fa48("89"), before.some(stryMutAct_9fa48("90") ? () => undefined : (stryCov_9fa48("90"), other => stryMutAct_9fa48("93") ? other.mount_path !== mount.mount_path : stryMutAct_9fa48("92") ? false : stryMutAct_9fa48("91") ? true : (stryCov_9fa48("91", "92", "93"), other.mount_path === mount.mount_path))))) ? stryMutAct_9fa48("94") ? [] : (stryCov_9fa48("94"), [stryMutAct_9fa48("95") ? {} : (stryCov_9fa48("95"), {
      path: stryMutAct_9fa48("96") ? [] : (stryCov_9fa48("96"), [index, stryMutAct_9fa48("97") ? "" : (stryCov_9fa48("97"), "mount_path")]),
      issue: stryMutAct_9fa48("98") ? `` : (stryCov_9fa48("98"), `duplicate mount path '${mount.mount_path}'`)
    })]) : stryMutAct_9fa48("99") ? ["Stryker was here"] : (stryCov_9fa48("99"), [])), ...((stryMutAct_9fa48("100") ? before.every(other => other.volume_name === mount.volume_name) : (stryCov_9fa48("100"), before.some(stryMutAct_9fa48("101") ? () => undefined : (stryCov_9fa48("101"), other => stryMutAct_9fa48("104") ? other.volume_name !== mount.volume_name : stryMutAct_9fa48("103") ? false : stryMutAct_9fa48("102") ? true : (stryCov_9fa48("102", "103", "104"), other.volume_name === mount.volume_name))))) ? stryMutAct_9fa48("105") ? [] : (stryCov_9fa48("105"), [stryMutAct_9fa48("106") ? {} : (stryCov_9fa48("106"), {
      path: stryMutAct_9fa48("107") ? [] : (stryCov_9fa48("107"), [index, stryMutAct_9fa48("108") ? "" : (stryCov_9fa48("108"), "volume_name")]),
      issue: stryMutAct_9fa48("109") ? `` : (stryCov_9fa48("109"), `volume '${mount.volume_name}' is already mounted`)
    })]) : stryMutAct_9fa48("110") ? ["Stryker was here"] : (stryCov_9fa48("110"), []))]);
  }
})), {
  [issueTypeKey]: "value_error"
} as any);
export const TemplateResourcesInput = Schema.Struct(stryMutAct_9fa48("111") ? {} : (stryCov_9fa48("111"), {
  cpu: withDefault(CpuQuantity, defaultCpu),
  memory: withDefault(MemoryQuantity, defaultMemory),
  storage: Schema.optionalKey(StorageQuantity)
})).annotate(stryMutAct_9fa48("112") ? {} : (stryCov_9fa48("112"), {
  identifier: stryMutAct_9fa48("113") ? "" : (stryCov_9fa48("113"), "TemplateResourcesInput")
}));
export const CreateTemplate = Schema.Struct(stryMutAct_9fa48("114") ? {} : (stryCov_9fa48("114"), {
  name: DnsLabel,
  image: Image,
  resources: withDefault(TemplateResourcesInput, {}),
  volume_mounts: withDefault(Schema.Array(VolumeMountInput).check(uniqueMounts), stryMutAct_9fa48("115") ? ["Stryker was here"] : (stryCov_9fa48("115"), [])),
  proxy_config: withDefault(ProxyConfigInput, {})
})).annotate(stryMutAct_9fa48("116") ? {} : (stryCov_9fa48("116"), {
  identifier: stryMutAct_9fa48("117") ? "" : (stryCov_9fa48("117"), "CreateTemplate")
}));
export type CreateTemplate = typeof CreateTemplate.Type;

/** Only the name of a template changes; its build settings are what its sandboxes were made from. */
export const PatchTemplate = Schema.Struct(stryMutAct_9fa48("118") ? {} : (stryCov_9fa48("118"), {
  name: DnsLabel
})).annotate(stryMutAct_9fa48("119") ? {} : (stryCov_9fa48("119"), {
  identifier: stryMutAct_9fa48("120") ? "" : (stryCov_9fa48("120"), "PatchTemplate")
}));
export const CreateVolume = Schema.Struct(stryMutAct_9fa48("121") ? {} : (stryCov_9fa48("121"), {
  name: DnsLabel,
  size: VolumeSize,
  /** Omitted → the server's default class (see `resolveStorageClass`). */
  storage_class: Schema.optionalKey(Schema.String),
  ...waitFields
})).annotate(stryMutAct_9fa48("122") ? {} : (stryCov_9fa48("122"), {
  identifier: stryMutAct_9fa48("123") ? "" : (stryCov_9fa48("123"), "CreateVolume")
}));
export type CreateVolume = typeof CreateVolume.Type;
export const PatchVolume = Schema.Struct(stryMutAct_9fa48("124") ? {} : (stryCov_9fa48("124"), {
  name: Schema.optionalKey(DnsLabel),
  size: Schema.optionalKey(VolumeSize)
})).annotate(stryMutAct_9fa48("125") ? {} : (stryCov_9fa48("125"), {
  identifier: stryMutAct_9fa48("126") ? "" : (stryCov_9fa48("126"), "PatchVolume")
}));
export type PatchVolume = typeof PatchVolume.Type;
export const CreatePool = Schema.Struct(stryMutAct_9fa48("127") ? {} : (stryCov_9fa48("127"), {
  name: DnsLabel,
  template_name: DnsLabel,
  replicas: Replicas,
  ...waitFields
})).annotate(stryMutAct_9fa48("128") ? {} : (stryCov_9fa48("128"), {
  identifier: stryMutAct_9fa48("129") ? "" : (stryCov_9fa48("129"), "CreatePool")
}));
export type CreatePool = typeof CreatePool.Type;
export const PatchPool = Schema.Struct(stryMutAct_9fa48("130") ? {} : (stryCov_9fa48("130"), {
  name: Schema.optionalKey(DnsLabel),
  replicas: Schema.optionalKey(Replicas)
})).annotate(stryMutAct_9fa48("131") ? {} : (stryCov_9fa48("131"), {
  identifier: stryMutAct_9fa48("132") ? "" : (stryCov_9fa48("132"), "PatchPool")
}));
export type PatchPool = typeof PatchPool.Type;
export const CreateBox = Schema.Struct(stryMutAct_9fa48("133") ? {} : (stryCov_9fa48("133"), {
  template_name: DnsLabel,
  /** Omitted → generated from the template name (`generateSandboxName`). */
  name: Schema.optionalKey(DnsLabel),
  ...waitFields
})).annotate(stryMutAct_9fa48("134") ? {} : (stryCov_9fa48("134"), {
  identifier: stryMutAct_9fa48("135") ? "" : (stryCov_9fa48("135"), "CreateBox")
}));
export type CreateBox = typeof CreateBox.Type;
export const PatchBox = Schema.Struct(stryMutAct_9fa48("136") ? {} : (stryCov_9fa48("136"), {
  name: DnsLabel
})).annotate(stryMutAct_9fa48("137") ? {} : (stryCov_9fa48("137"), {
  identifier: stryMutAct_9fa48("138") ? "" : (stryCov_9fa48("138"), "PatchBox")
}));
export type PatchBox = typeof PatchBox.Type;

/** The `{name}` path parameter of every sandbox-area item endpoint. */
export const NameParams = Schema.Struct(stryMutAct_9fa48("139") ? {} : (stryCov_9fa48("139"), {
  name: Schema.String
}));