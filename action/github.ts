/**
 * The GitHub side of a run, when a `github-token` is given: a GitHub Deployment for the
 * `environment`, and its statuses (in_progress while Slipway works, then success with the
 * deployment's URL as the environment URL, or failure), through `@actions/github`'s Octokit.
 * The API base comes from GITHUB_API_URL (GitHub Enterprise Server sets it), as @actions/github
 * reads it.
 *
 * Recording the deployment is a courtesy to the repository's Environments page: when GitHub
 * refuses (no `deployments: write` permission, a merge conflict answer, an outage) the step
 * warns and goes on; it never fails a deploy that Slipway itself completed.
 */
import { getOctokit } from "@actions/github"

export interface GitHubLog {
  readonly info: (message: string) => void
  readonly warning: (message: string) => void
}

export interface GitHubTarget {
  readonly token: string
  readonly environment: string
  /** owner/repo (GITHUB_REPOSITORY). */
  readonly repository: string
  /** What the deployment is of: the commit (GITHUB_SHA), else the ref. */
  readonly ref: string
  readonly description: string
  /** This workflow run's page, as the status's log_url. */
  readonly logUrl: string | undefined
}

export type FinalState = "success" | "failure" | "error"

export interface GitHubDeployment {
  readonly id: number | undefined
  readonly finish: (state: FinalState, environmentUrl: string | undefined, description: string) => Promise<void>
}

const reason = (error: unknown) => {
  const status = (error as { status?: number }).status
  return `${status ? `HTTP ${status}: ` : ""}${error instanceof Error ? error.message : String(error)}`
}

/** Creates the GitHub Deployment and marks it in_progress; `finish` records the outcome. */
export const startGitHubDeployment = async (target: GitHubTarget, log: GitHubLog): Promise<GitHubDeployment> => {
  const [owner, repo] = target.repository.split("/")
  if (!owner || !repo) {
    log.warning(`github-token is set but GITHUB_REPOSITORY (${JSON.stringify(target.repository)}) names no repository; no GitHub Deployment recorded`)
    return { id: undefined, finish: async () => {} }
  }
  const octokit = getOctokit(target.token)
  let id: number | undefined
  try {
    const created = await octokit.rest.repos.createDeployment({
      owner,
      repo,
      ref: target.ref,
      environment: target.environment,
      description: target.description.slice(0, 140),
      auto_merge: false,
      required_contexts: [],
      transient_environment: false
    })
    const data = created.data as { id?: number; message?: string }
    if (typeof data.id !== "number") {
      log.warning(`GitHub did not create a deployment: ${data.message ?? `HTTP ${created.status}`}`)
    } else {
      id = data.id
      log.info(`GitHub Deployment ${id} for environment ${target.environment}`)
      await octokit.rest.repos.createDeploymentStatus({
        owner,
        repo,
        deployment_id: id,
        state: "in_progress",
        ...(target.logUrl ? { log_url: target.logUrl } : {}),
        description: "Slipway is deploying"
      })
    }
  } catch (error) {
    log.warning(`Could not record a GitHub Deployment for environment ${target.environment}: ${reason(error)}`)
  }
  return {
    id,
    finish: async (state, environmentUrl, description) => {
      if (id === undefined) return
      try {
        await octokit.rest.repos.createDeploymentStatus({
          owner,
          repo,
          deployment_id: id,
          state,
          environment: target.environment,
          ...(environmentUrl ? { environment_url: environmentUrl } : {}),
          ...(target.logUrl ? { log_url: target.logUrl } : {}),
          description: description.slice(0, 140),
          auto_inactive: state === "success"
        })
      } catch (error) {
        log.warning(`Could not record the GitHub Deployment status ${state}: ${reason(error)}`)
      }
    }
  }
}
