/**
 * What a build starts from: the interface between the deployment runtime and the build pipeline
 * (`BuildPipeline.ts`). The local deployment driver turns a revision into a `BuildInput`
 * (`imageSourceOf` in server/deployments/drivers/local.ts): a `gitrepo` revision is a `Git`
 * source, an `internal_source` revision (an uploaded tarball, `langgraph deploy --remote`) a
 * `Tarball` source, which the pipeline unpacks with `SourceUploads.extract`.
 *
 * Types only: no I/O, nothing to build.
 */
import type { Redacted } from "effect"

/** One commit of a git repository. */
export interface GitBuildSource {
  readonly _tag: "Git"
  /** `https://…`, or `http://…` for a host listed in SLIPWAY_INSECURE_GIT_HOSTS. */
  readonly repoUrl: string
  /** A branch or tag (`main`, `refs/heads/main`, `refs/tags/v1`): its tip is built when no commit is pinned. */
  readonly ref?: string | null | undefined
  /**
   * A pinned commit: a full sha is fetched by id; an abbreviated one (7+ hex digits) must be the
   * tip of `ref`, or the build fails saying so.
   */
  readonly commitSha?: string | null | undefined
  /** The integration's read token for a private repository (never logged, never written to disk). */
  readonly token?: Redacted.Redacted<string> | undefined
}

/** An uploaded source tarball (`object_path` of `POST /v2/deployments/{id}/upload-url`). */
export interface TarballBuildSource {
  readonly _tag: "Tarball"
  readonly tenantId: string
  readonly deploymentId: string
  /** The `source_tarball_path` the PATCH named: checked by `SourceUploads` to be an upload of this deployment. */
  readonly objectPath: string
  /** The name of the tarball's root directory, for the Dockerfile's `/deps/<name>`; default "source". */
  readonly rootName?: string | undefined
}

export type BuildSource = GitBuildSource | TarballBuildSource

/** One build: a revision's source and how the langgraph CLI would build it. */
export interface BuildInput {
  readonly tenantId: string
  /** The deployment: its builds share a layer cache and queue one behind the other. */
  readonly deploymentId: string
  /** The revision: its image's tag. */
  readonly revisionId: string
  readonly source: BuildSource
  /** `langgraph_config_path` (`graph_config_path`), relative to the source's root; default `langgraph.json`. */
  readonly configPath?: string | null | undefined
  /** `source_config.install_command` / `build_command` (JavaScript projects, as the CLI's options). */
  readonly installCommand?: string | null | undefined
  readonly buildCommand?: string | null | undefined
}
