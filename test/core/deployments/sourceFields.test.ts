import { describe, expect, it } from "vitest"
import { CreateDeployment, CreateListener, PatchDeployment, SourceConfig, SourceRevisionConfig } from "../../../core/deployments/model.ts"
import {
  branchOf,
  gitRefProblem,
  imageReferenceProblem,
  insecureGitHostProblem,
  maxImageNameLength,
  maxRepoPathLength,
  maxRepoRefLength,
  maxRepoUrlLength,
  repoPathProblem,
  repoUrlProblem
} from "../../../core/deployments/sourceFields.ts"
import { bodyIssues, decodeBody } from "./helpers.ts"

/** The problem text, asserting it names the field (and, where given, the rule). */
const refused = (problem: string | undefined, field: string, rule?: RegExp): string => {
  expect(problem, "expected the value to be refused").toBeTypeOf("string")
  expect(problem).toContain(field)
  if (rule) expect(problem).toMatch(rule)
  return problem!
}

describe("repo_url: https and ssh git URLs only", () => {
  it.each([
    "https://github.com/acme/agent",
    "https://github.com/acme/agent.git",
    "HTTPS://github.com/acme/agent",
    "https://gitlab.example.com:8443/group/sub/project.git",
    "https://dev.azure.com/org/My%20Project/_git/repo",
    "https://[2001:db8::1]/acme/agent",
    "https://10.0.0.1/acme/agent/",
    "ssh://git@github.com/acme/agent.git",
    "ssh://github.com:2222/acme/agent",
    "ssh://git@[::1]:22/acme/agent",
    "git@github.com:acme/agent.git",
    "git@github.com:acme/agent",
    "deploy.user@git.example.com:/srv/git/agent.git"
  ])("accepts %s", (url) => {
    expect(repoUrlProblem(url)).toBeUndefined()
  })

  it.each([
    ["file:///etc/passwd", /transport 'file'/],
    ["FILE:///etc/passwd", /transport 'file'/],
    ["ext::sh%20-c%20id", /transport 'ext'/],
    ["fd::3", /transport 'fd'/],
    ["git://github.com/acme/agent", /transport 'git'/],
    ["http://github.com/acme/agent", /transport 'http'/],
    ["ftp://github.com/acme/agent", /transport 'ftp'/],
    ["--upload-pack=touch /tmp/pwned", /start with '-'/],
    ["-oProxyCommand=x", /start with '-'/],
    ["ext::sh -c touch% /tmp/pwned", /whitespace/],
    ["https://github.com/acme/agent\n", /control characters/],
    ["https://github.com/acme/\u0000agent", /control characters/],
    ["https://github.com/acme/agent\u007f", /control characters/],
    ["https://github.com/acme/ agent", /whitespace/],
    ["https://github.com/acme/agent\u00a0", /whitespace/],
    ["/etc/passwd", /must be a git URL/],
    ["../other-repo", /must be a git URL/],
    ["github.com/acme/agent", /must be a git URL/],
    ["https://github.com", /repository path/],
    ["https://github.com/", /repository path/],
    ["https://github.com/acme/agent?ref=main", /no query or fragment/],
    ["https://github.com/acme/agent#main", /no query or fragment/],
    ["https://github.com/acme/../agent", /'\.' or '\.\.' segments/],
    ["https://github.com/./agent", /'\.' or '\.\.' segments/],
    ["https://github.com/acme/-agent", /must not start with '-'/],
    ["https://-github.com/acme/agent", /host/],
    ["https:///acme/agent", /host/],
    ["https://github.com:0/acme/agent", /port/],
    ["https://github.com:65536/acme/agent", /port/],
    ["https://github.com:x/acme/agent", /port/],
    ["ssh://git@github.com:99999/acme/agent", /port/],
    ["ssh://git@github.com", /repository path/],
    ["ssh://git@-host/acme/agent", /host/],
    ["ssh://g!t@github.com/acme/agent", /ssh user/],
    ["g!t@github.com:acme/agent", /ssh user/],
    ["git@-github.com:acme/agent", /host/],
    ["git@github.com:", /repository path/],
    ["git@github.com:-acme/agent", /must not start with '-'/],
    ["git@github.com:acme/agent?x", /no query/],
    [`https://github.com/${"a".repeat(maxRepoUrlLength)}`, /at most 2048/]
  ])("refuses %j", (url, rule) => {
    refused(repoUrlProblem(url), "repo_url", rule)
  })

  it("refuses credentials in an https URL, and never quotes them back", () => {
    for (const url of ["https://ghp_secret123@github.com/acme/agent", "https://user:ghp_secret123@github.com/acme/agent", "https://x-access-token:s3cr3t@github.com/a/b"]) {
      const problem = refused(repoUrlProblem(url), "repo_url", /credentials/)
      expect(problem).not.toContain("secret")
      expect(problem).not.toContain("s3cr3t")
    }
  })

  it("refuses a password in an ssh URL, and accepts a user alone", () => {
    const problem = refused(repoUrlProblem("ssh://git:hunter2@github.com/acme/agent"), "repo_url", /password/)
    expect(problem).not.toContain("hunter2")
    expect(repoUrlProblem("ssh://git@github.com/acme/agent")).toBeUndefined()
  })

  it("refuses the empty string", () => {
    refused(repoUrlProblem(""), "repo_url", /empty/)
  })
})

describe("repo_url: plain http:// only to the listed insecure git hosts (SLIPWAY_INSECURE_GIT_HOSTS)", () => {
  const listed = { insecureHosts: ["127.0.0.1:8418", "git.lan", "[::1]:9000"] }

  it.each([
    "http://127.0.0.1:8418/acme/agent.git",
    "HTTP://127.0.0.1:8418/acme/agent",
    "http://git.lan/acme/agent",
    "http://GIT.LAN:80/acme/agent",
    "http://[::1]:9000/acme/agent"
  ])("accepts %s when its host:port is listed", (url) => {
    expect(repoUrlProblem(url, listed)).toBeUndefined()
  })

  it.each([
    ["http://127.0.0.1:8418/acme/agent", {}],
    ["http://127.0.0.1:8418/acme/agent", { insecureHosts: [] }],
    ["http://127.0.0.1:8419/acme/agent", listed],
    ["http://127.0.0.1/acme/agent", listed],
    ["http://git.lan:8080/acme/agent", listed],
    ["http://10.0.0.1:8418/acme/agent", listed]
  ])("refuses %s when its host:port is not listed", (url, options) => {
    const problem = refused(repoUrlProblem(url, options), "repo_url", /transport 'http'/)
    expect(problem).toMatch(/SLIPWAY_INSECURE_GIT_HOSTS/)
  })

  it("holds a listed host's URL to the same grammar as https, credentials included (never quoted back)", () => {
    refused(repoUrlProblem("http://127.0.0.1:8418/acme/../agent", listed), "repo_url", /'\.' or '\.\.' segments/)
    refused(repoUrlProblem("http://127.0.0.1:8418", listed), "repo_url", /repository path/)
    const problem = refused(repoUrlProblem("http://tok3n@127.0.0.1:8418/acme/agent", listed), "repo_url", /credentials/)
    expect(problem).not.toContain("tok3n")
    // Unlisted, the answer names only the host, never what stands before '@'.
    expect(repoUrlProblem("http://tok3n@10.9.9.9:1/acme/agent", listed)).not.toContain("tok3n")
  })

  it('"any" checks the grammar of any http URL and leaves the host to a later check', () => {
    expect(repoUrlProblem("http://example.com/acme/agent", { insecureHosts: "any" })).toBeUndefined()
    refused(repoUrlProblem("http://example.com/", { insecureHosts: "any" }), "repo_url", /repository path/)
    refused(repoUrlProblem("git://example.com/acme/agent", { insecureHosts: "any" }), "repo_url", /transport 'git'/)
  })

  it("checks the entries of the setting", () => {
    for (const entry of ["127.0.0.1:8418", "git.lan", "[::1]:9000", " gitea:3000 "]) expect(insecureGitHostProblem(entry)).toBeUndefined()
    expect(insecureGitHostProblem("http://git.lan")).toMatch(/must be host or host:port/)
    expect(insecureGitHostProblem("git.lan:0")).toMatch(/port/)
    expect(insecureGitHostProblem("git.lan:x")).toMatch(/port/)
    expect(insecureGitHostProblem("")).toMatch(/must be host or host:port/)
  })

  it("the request schema takes any grammatical http URL (planCreate checks the host)", () => {
    expect(decodeBody(SourceConfig, { repo_url: "http://127.0.0.1:8418/acme/agent.git" })).toStrictEqual({ repo_url: "http://127.0.0.1:8418/acme/agent.git" })
    expect(bodyIssues(SourceConfig, { repo_url: "http://127.0.0.1:8418/" })[0]!.msg).toMatch(/repository path/)
  })
})

describe("repo_ref: git ref names (git check-ref-format)", () => {
  it.each(["main", "feature/login", "release-1.0", "v1.2.3", "refs/heads/main", "refs/tags/v1.0.0", "refs/tags/release/2024", "tags/v1", "ünïcode", "a@b", "@x", "x.y"])(
    "accepts %s",
    (ref) => {
      expect(gitRefProblem(ref)).toBeUndefined()
    }
  )

  it.each([
    ["-main", /start with '-'/],
    ["--upload-pack=x", /start with '-'/],
    ["main..dev", /'\.\.'/],
    ["main@{1}", /'@\{'/],
    ["@", /must not be '@'/],
    ["ma in", /whitespace/],
    ["main\n", /control characters/],
    ["main\u0000", /control characters/],
    ["main~1", /'~'/],
    ["main^", /'\^'/],
    ["a:b", /':'/],
    ["a?", /'\?'/],
    ["a*", /'\*'/],
    ["a[b", /'\['/],
    ["a\\b", /'\\'/],
    ["main.lock", /'\.lock'/],
    ["feature/x.lock/y", /'\.lock'/],
    ["main/", /'\/'/],
    ["/main", /'\/'/],
    ["a//b", /'\/\/'/],
    ["main.", /end with '\.'/],
    [".hidden", /start with '\.'/],
    ["feature/.hidden", /start with '\.'/],
    ["HEAD", /HEAD/],
    ["refs/pull/1/head", /other refs\/ namespaces/],
    ["refs/remotes/origin/main", /other refs\/ namespaces/],
    ["refs/heads", /other refs\/ namespaces|name a/],
    ["refs/tags/-v1", /must not start with '-'/],
    ["refs/heads/-x", /must not start with '-'/],
    [`b${"x".repeat(maxRepoRefLength)}`, /at most 255/]
  ])("refuses %j", (ref, rule) => {
    refused(gitRefProblem(ref), "repo_ref", rule)
  })

  it("refuses refs/heads/ and refs/tags/ without a name", () => {
    // "refs/heads/" ends with '/', caught by the slash rule before the namespace rule.
    refused(gitRefProblem("refs/heads/"), "repo_ref")
    refused(gitRefProblem("refs/tags/"), "repo_ref")
  })

  it("reads refs/heads/main as the branch main, a bare name as itself, a tag as no branch", () => {
    expect(branchOf("refs/heads/main")).toBe("main")
    expect(branchOf("refs/heads/feature/x")).toBe("feature/x")
    expect(branchOf("main")).toBe("main")
    expect(branchOf("tags/v1")).toBe("tags/v1")
    expect(branchOf("refs/tags/v1")).toBeNull()
  })
})

describe("graph_config_path: a relative path inside the repository", () => {
  it.each(["langgraph.json", "apps/agent/langgraph.json", "./langgraph.json", "dir with space/langgraph.json", "a..b/c.json", "..json", ".config/lg.json"])(
    "accepts %s",
    (path) => {
      expect(repoPathProblem(path)).toBeUndefined()
    }
  )

  it.each([
    ["/etc/passwd", /no leading '\/'/],
    ["../../etc/passwd", /'\.\.' segments/],
    ["apps/../../x.json", /'\.\.' segments/],
    ["..", /'\.\.' segments/],
    ["apps/..", /'\.\.' segments/],
    ["-c.json", /start with '-'/],
    ["lang\u0000graph.json", /control characters/],
    ["langgraph.json\n", /control characters/],
    ["..\\..\\x.json", /'\/', not '\\'/],
    ["", /empty/],
    ["a".repeat(maxRepoPathLength + 1), /at most 1024/]
  ])("refuses %j", (path, rule) => {
    refused(repoPathProblem(path), "graph_config_path", rule)
  })

  it("names the field it checks", () => {
    refused(repoPathProblem("/x", "some_path"), "some_path")
  })
})

describe("image_uri: the OCI image reference grammar", () => {
  it.each([
    "shop:2",
    "x",
    "alpine",
    "python:3.12-slim",
    "library/ubuntu:24.04",
    "ghcr.io/acme/agent:1.0.0",
    "registry.example.com/acme/sub/agent",
    "127.0.0.1:5055/acme/tiny:1",
    "localhost:5000/agent:latest",
    "Registry.Example.com/acme/agent:1",
    "[::1]:5000/agent:1",
    "acme/agent_x__y-z.w:Tag_1.0-rc",
    "acme/agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "acme/agent:1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "img:fail-deploy",
    `a:${"t".repeat(128)}`
  ])("accepts %s", (reference) => {
    expect(imageReferenceProblem(reference)).toBeUndefined()
  })

  it.each([
    ["--privileged", /start with '-'/],
    ["-v=/:/host", /start with '-'/],
    ["shop:2\n--privileged", /control characters/],
    ["shop:2 --privileged", /whitespace/],
    ["Acme/Agent:1", /lowercase/],
    ["SHOP", /lowercase/],
    ["docker://acme/agent:1", /without a scheme/],
    ["acme/agent:", /OCI image reference/],
    ["acme/agent:-x", /OCI image reference/],
    [`a:${"t".repeat(129)}`, /OCI image reference/],
    ["acme//agent", /OCI image reference/],
    ["acme/agent-", /OCI image reference/],
    ["acme/agent@sha256:abc", /OCI image reference/],
    ["acme/agent@sha256", /OCI image reference/],
    ["/acme/agent", /OCI image reference/],
    ["acme/agent/", /OCI image reference/],
    ["ghcr.io:port/acme/agent", /OCI image reference/],
    ["", /empty/]
  ])("refuses %j", (reference, rule) => {
    refused(imageReferenceProblem(reference), "image_uri", rule)
  })

  it("bounds the repository name to 255 characters, tag excluded", () => {
    const name = `r/${"a".repeat(maxImageNameLength - 2)}`
    expect(imageReferenceProblem(`${name}:1`)).toBeUndefined()
    refused(imageReferenceProblem(`${name}a:1`), "image_uri", /at most 255/)
  })

  it("names the field it checks", () => {
    refused(imageReferenceProblem("--privileged", "image"), "image")
  })
})

describe("the schemas answer a 422 at the field, typed value_error", () => {
  it("source_config.repo_url", () => {
    expect(bodyIssues(SourceConfig, { repo_url: "file:///etc/passwd" })).toStrictEqual([
      {
        loc: ["body", "repo_url"],
        msg: "repo_url uses the transport 'file'; only https:// and ssh:// URLs (or git@host:owner/repo) are allowed",
        type: "value_error"
      }
    ])
  })

  it("every source revision field at once, one issue each", () => {
    const issues = bodyIssues(SourceRevisionConfig, { repo_ref: "-x", graph_config_path: "../../x", image_uri: "--privileged" })
    expect(issues.map(({ loc, type }) => ({ loc, type }))).toStrictEqual([
      { loc: ["body", "repo_ref"], type: "value_error" },
      { loc: ["body", "graph_config_path"], type: "value_error" },
      { loc: ["body", "image_uri"], type: "value_error" }
    ])
  })

  it("an empty value is one string_too_short, not two issues", () => {
    for (const field of ["repo_ref", "graph_config_path", "image_uri"]) {
      expect(bodyIssues(SourceRevisionConfig, { [field]: "" })).toStrictEqual([
        { loc: ["body", field], msg: "String should have at least 1 character", type: "string_too_short" }
      ])
    }
    expect(bodyIssues(SourceConfig, { repo_url: "" })).toStrictEqual([
      { loc: ["body", "repo_url"], msg: "String should have at least 1 character", type: "string_too_short" }
    ])
  })

  it("sidecar and init container images", () => {
    const issues = bodyIssues(CreateDeployment, {
      name: "d",
      source: "external_container",
      source_config: {
        resource_spec: { sidecars: [{ name: "s", image: "--privileged" }], init_containers: [{ name: "i", image: "Upper/Case" }] }
      },
      source_revision_config: { image_uri: "ok:1" }
    })
    expect(issues).toHaveLength(2)
    expect(issues).toEqual(
      expect.arrayContaining([
        {
          loc: ["body", "source_config", "resource_spec", "init_containers", 0, "image"],
          msg: "image's repository path must be lowercase (only the registry host may use uppercase)",
          type: "value_error"
        },
        {
          loc: ["body", "source_config", "resource_spec", "sidecars", 0, "image"],
          msg: "image must not start with '-' (a tool would read it as an option)",
          type: "value_error"
        }
      ])
    )
  })

  it("a PATCH is checked by the same grammar", () => {
    expect(bodyIssues(PatchDeployment, { source_revision_config: { repo_ref: "main..x" } })[0]!.loc).toStrictEqual(["body", "source_revision_config", "repo_ref"])
    expect(decodeBody(PatchDeployment, { source_revision_config: { repo_ref: "refs/heads/main" } })).toStrictEqual({
      source_revision_config: { repo_ref: "refs/heads/main" }
    })
  })
})

describe("found by mutation testing in sourceFields.ts", () => {
  it("repo_url: the boundaries of ports and lengths are inclusive", () => {
    expect(repoUrlProblem("https://github.com:1/acme/agent")).toBeUndefined()
    expect(repoUrlProblem("https://github.com:65535/acme/agent")).toBeUndefined()
    const prefix = "https://github.com/acme/"
    expect(repoUrlProblem(prefix + "a".repeat(maxRepoUrlLength - prefix.length))).toBeUndefined()
    expect(repoUrlProblem(prefix + "a".repeat(maxRepoUrlLength - prefix.length + 1))).toMatch(/at most 2048/)
  })

  it("repo_url: a port is decimal digits only", () => {
    for (const port of ["0x10", "1e3", "+22", " 22"]) refused(repoUrlProblem(`https://github.com:${port}/acme/agent`), "repo_url")
    expect(repoUrlProblem("https://github.com:0x10/acme/agent")).toMatch(/port/)
    expect(repoUrlProblem("https://github.com:1e3/acme/agent")).toMatch(/port/)
  })

  it("repo_url: which rule answers", () => {
    expect(repoUrlProblem("https://github.com/")).toMatch(/must name a repository path/)
    expect(repoUrlProblem("https://github.com//")).toMatch(/must name a repository path/)
    expect(repoUrlProblem("https://github.com?x")).toMatch(/must name a repository path/)
    expect(repoUrlProblem("https:github.com/acme/agent")).toMatch(/must be a git URL/)
    expect(repoUrlProblem("github.com:acme/agent")).toMatch(/must be a git URL/)
    expect(repoUrlProblem("git@github.com:acme/-agent")).toMatch(/must not start with '-'/)
    expect(repoUrlProblem("https://github.com/acme/my-agent")).toBeUndefined()
    expect(repoUrlProblem("https://github.com//acme//agent//")).toBeUndefined()
    expect(repoUrlProblem("git@github.com:acme/my-agent.git")).toBeUndefined()
  })

  it("repo_ref: a namespace without a name, and the length boundary", () => {
    expect(gitRefProblem("refs/heads")).toBe("repo_ref must name a branch after refs/heads/")
    expect(gitRefProblem("refs/tags")).toBe("repo_ref must name a tag after refs/tags/")
    expect(gitRefProblem("a".repeat(maxRepoRefLength))).toBeUndefined()
  })

  it("graph_config_path: the length boundary, and spaces are allowed only there", () => {
    expect(repoPathProblem("a".repeat(maxRepoPathLength))).toBeUndefined()
    expect(repoPathProblem("my graph/langgraph.json")).toBeUndefined()
    expect(gitRefProblem("my branch")).toMatch(/whitespace/)
  })
})

describe("found by mutation testing in model.ts", () => {
  it("container names may have 63 characters, not 64", () => {
    const body = (name: string) => ({ name: "d", source: "external_container", source_config: { resource_spec: { sidecars: [{ name, image: "a:1" }] } }, source_revision_config: { image_uri: "a:1" } })
    expect(decodeBody(CreateDeployment, body("a".repeat(63))).source_config?.resource_spec?.sidecars?.[0]?.name).toHaveLength(63)
    expect(bodyIssues(CreateDeployment, body("a".repeat(64)))[0]!.loc).toStrictEqual(["body", "source_config", "resource_spec", "sidecars", 0, "name"])
  })

  it("custom_url: http and https accepted, anything unparseable refused", () => {
    expect(decodeBody(SourceConfig, { custom_url: "http://agent.local" })).toStrictEqual({ custom_url: "http://agent.local" })
    expect(decodeBody(SourceConfig, { custom_url: "https://agent.example.com" })).toStrictEqual({ custom_url: "https://agent.example.com" })
    expect(bodyIssues(SourceConfig, { custom_url: "not a url" })).toStrictEqual([
      { loc: ["body", "custom_url"], msg: "Input should be a valid URL with an http or https scheme", type: "url_parsing" }
    ])
  })

  it("a listener's namespaces are unique, the duplicate named", () => {
    expect(bodyIssues(CreateListener, { compute_config: { k8s_namespaces: ["a", "a"] } })).toStrictEqual([
      { loc: ["body", "compute_config", "k8s_namespaces", 1], msg: "Duplicate namespace name 'a'", type: "value_error" }
    ])
  })
})
