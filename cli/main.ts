/**
 * `slipway`: the command line of a Slipway server. Deploys and rolls back through the same core as
 * the GitHub Action (core/deploy), talks to the API through the core's typed client
 * (core/client), and to a box's dataplane for `sandbox exec` and `sandbox cp`.
 *
 * Run it as `npx slipway …` (the package's bin, bin/slipway.js), or `npm run slipway -- …` in a
 * checkout. Exit codes: see cli/errors.ts and docs/cli.md.
 *
 * Arguments are parsed by commander (well kept, no dependencies, typed; subcommands, variadic
 * arguments after `--`, help generated from the definitions): see docs/cli.md.
 */
import { realpathSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Command, CommanderError, Option } from "commander"
import { type GlobalFlags, resolveSettings } from "./config.ts"
import * as deployments from "./deployments.ts"
import { CliError, ExitCode } from "./errors.ts"
import * as keys from "./keys.ts"
import { makeOutput, type Output } from "./output.ts"
import * as sandbox from "./sandbox.ts"

export const version = "0.1.0"

interface Globals extends GlobalFlags {
  readonly json?: boolean
}

const collect = (value: string, previous: ReadonlyArray<string> = []) => [...previous, value]

/** `--limit` and `--offset` of a command that lists a page. */
const paged = (command: Command, limit: number): Command =>
  command.option("--limit <n>", "at most this many", String(limit)).option("--offset <n>", "skip this many", "0")

/** Builds the program; `done` receives the exit code of the command that ran. */
export const makeProgram = (done: (code: number) => void): Command => {
  const program = new Command("slipway")
    .description("Deploy to and manage a Slipway server: deployments, revisions, sandboxes and keys.")
    .version(version)
    .option("--url <url>", "server base URL (env SLIPWAY_URL; default http://127.0.0.1:8080)")
    .option("--api-key <key>", "API key (env SLIPWAY_API_KEY)")
    .option("--tenant <uuid>", "tenant id (env SLIPWAY_TENANT_ID; default: the key's own tenant)")
    .option("--config <path>", "config file (default $XDG_CONFIG_HOME/slipway/config.json)")
    .option("--json", "print one JSON document on stdout (errors too)")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()

  /** Wraps a command's action: settings from flags/env/file, output mode, errors to exit codes. */
  const action =
    <A extends Array<any>>(handler: (context: { settings: () => ReturnType<typeof resolveSettings>; output: Output; globals: Globals }, ...args: A) => Promise<number | void>) =>
    async (...args: Array<any>) => {
      const command = args[args.length - 1] as Command
      const globals = command.optsWithGlobals() as Globals
      const output = makeOutput(Boolean(globals.json))
      try {
        const code = await handler({ settings: () => resolveSettings(globals), output, globals }, ...(args.slice(0, -1) as A))
        done(typeof code === "number" ? code : ExitCode.ok)
      } catch (error) {
        done(report(error, output))
      }
    }

  const deploy = program
    .command("deploy")
    .description("create or update a deployment and wait until its revision is DEPLOYED (the GitHub Action's logic)")
  for (const [name, description] of deployments.deployFlags) deploy.option(`--${name} <value>`, description)
  deploy
    .option("--secret <NAME=value>", "one secret (repeatable)", collect)
    .option("--secrets-file <path>", "secrets as NAME=value lines from a file")
    .option("--no-wait", "return once the revision is created, without waiting")
    .action(action(async ({ settings, output }, options) => deployments.runDeploy(settings(), output, deployments.deployInputs(settings(), options))))

  paged(program.command("list").alias("ls").description("deployments with their status and URL"), 50)
    .option("--name-contains <text>", "only deployments whose name contains this")
    .option("--status <status>", "only deployments in this status (e.g. READY)")
    .action(action(async ({ settings, output }, options) => deployments.list(settings(), output, options)))

  program
    .command("status")
    .description("a deployment with its active and latest revisions")
    .argument("<deployment>", "name or id")
    .action(action(async ({ settings, output }, ref: string) => deployments.status(settings(), output, ref)))

  paged(program.command("revisions").description("a deployment's revisions, newest first (* marks the active one)").argument("<deployment>", "name or id"), 20)
    .option("--status <list>", "only these statuses, comma-separated (e.g. DEPLOYED,DEPLOY_FAILED)")
    .action(action(async ({ settings, output }, ref: string, options) => deployments.revisions(settings(), output, ref, options)))

  program
    .command("logs")
    .description("a revision's build or deploy logs (the latest revision unless --revision)")
    .argument("<deployment>", "name or id")
    .option("--revision <id>", "the revision (default: the latest)")
    .addOption(new Option("--type <type>", "which logs (default: build while building, else deploy)").choices(["build", "deploy"]))
    .option("-f, --follow", "keep printing new lines until the revision is DEPLOYED or failed")
    .option("--tail <n>", "only the last n lines")
    .action(action(async ({ settings, output }, ref: string, options) => deployments.logs(settings(), output, ref, options)))

  program
    .command("rollback")
    .description("redeploy the previous DEPLOYED revision (or --to one) and wait until it serves")
    .argument("<deployment>", "name or id")
    .option("--to <revision>", "the revision to make active again")
    .option("--no-wait", "do not wait")
    .option("--timeout <duration>", "how long to wait (15m, 90s)", "15m")
    .action(
      action(async ({ settings, output }, ref: string, options: { to?: string; wait: boolean; timeout: string }) => {
        const resolved = settings()
        const client = deployments.clientFor(resolved)
        const deployment = await deployments.resolveDeployment(client, ref)
        const target = await deployments.rollbackTarget(client, deployment, options.to)
        output.progress(`Rolling ${deployment.name} back to revision ${target}`)
        const inputs = deployments.deployInputs(resolved, { name: deployment.name, "redeployRevisionId": target, wait: options.wait, timeout: options.timeout })
        await deployments.runDeploy(resolved, output, inputs)
      })
    )

  const boxes = program.command("sandbox").description("sandboxes (boxes): create, list, remove, run commands, copy files")
  boxes
    .command("create")
    .description("create a sandbox from a template; prints its name")
    .requiredOption("--template <name>", "the template")
    .option("--name <name>", "the sandbox name (generated when absent)")
    .option("--wait", "wait until it is ready")
    .option("--timeout <seconds>", "how long the server waits with --wait")
    .action(action(async ({ settings, output }, options) => sandbox.create(settings(), output, options)))
  paged(boxes.command("ls").description("list sandboxes with their status"), 50).action(action(async ({ settings, output }, options) => sandbox.list(settings(), output, options)))
  boxes
    .command("rm")
    .description("delete sandboxes")
    .argument("<names...>", "sandbox names")
    .action(action(async ({ settings, output }, names: Array<string>) => sandbox.remove(settings(), output, names)))
  boxes
    .command("exec")
    .description("run a command in a sandbox through its dataplane; exits with the command's exit code")
    .argument("<name>", "the sandbox")
    .argument("[command...]", "the command (after --); one argument is run as a shell line")
    .option("--timeout <seconds>", "command timeout", "60")
    .option("--shell <path>", "the shell that runs it", "/bin/sh")
    .option("--cwd <dir>", "working directory in the box")
    .option("--env <NAME=value>", "environment variable (repeatable)", collect)
    .action(action(async ({ settings, output }, name: string, command: Array<string>, options) => sandbox.exec(settings(), output, name, command, options)))
  boxes
    .command("cp")
    .description("copy a file into or out of a sandbox: cp ./a.txt box:/tmp/a.txt, cp box:/tmp/a.txt ./a.txt (- for stdout)")
    .argument("<source>")
    .argument("<destination>")
    .action(action(async ({ settings, output }, source: string, destination: string) => sandbox.copy(settings(), output, source, destination)))

  const keyCommands = program.command("keys").description("API keys in a local server's database file (DATABASE_PATH or --database)")
  const databaseOptions = (command: Command) =>
    command.option("--database <path>", "the server's SQLite file (env DATABASE_PATH; default ./data/slipway.db)").option("--create-database", "create the file when it does not exist")
  databaseOptions(keyCommands.command("list").description("list keys (never their values)")).action(action(async ({ output }, options) => keys.listKeys(output, options)))
  databaseOptions(
    keyCommands
      .command("create")
      .description("mint a key for --tenant <uuid> (created when new) or --new-tenant; prints the key once")
      .option("--new-tenant", "generate the tenant's uuid (a new tenant)")
      .option("--org <uuid>", "the tenant's organization (default: its own)")
      .option("--description <text>", "what the key is for")
  ).action(action(async ({ output, globals }, options) => keys.createKey(output, { ...options, tenant: globals.tenant })))
  databaseOptions(keyCommands.command("revoke").description("revoke a key by id").argument("<id>")).action(action(async ({ output }, id: string, options) => keys.revokeKey(output, id, options)))

  program
    .command("backup")
    .description("copy a local server's SQLite database (and its secrets key file) to <file>, consistently, also while the server runs")
    .argument("<file>", "the backup to write")
    .option("--database <path>", "the server's SQLite file (env DATABASE_PATH; default ./data/slipway.db)")
    .option("--force", "replace <file> when it exists")
    .action(action(async ({ output }, file: string, options) => (await import("./backup.ts")).backup(output, file, options)))
  program
    .command("restore")
    .description("replace a local server's database with a backup; refuses while a server has the database open")
    .argument("<file>", "a backup written by slipway backup")
    .option("--database <path>", "the server's SQLite file (env DATABASE_PATH; default ./data/slipway.db)")
    .option("--create-database", "restore into a database file that does not exist yet")
    .action(action(async ({ output }, file: string, options) => (await import("./backup.ts")).restore(output, file, options)))

  program
    .command("config")
    .description("show the settings in effect and where each comes from (the key is not shown)")
    .action(
      action(async ({ settings, output }) => {
        const resolved = settings()
        const view = { url: resolved.url, api_key: resolved.apiKey === undefined ? null : "(set)", tenant_id: resolved.tenantId ?? null, sources: resolved.sources, config_path: resolved.configPath }
        output.result(view, () =>
          [`url        ${view.url}  (${resolved.sources.url})`, `api key    ${view.api_key ?? "(unset)"}  (${resolved.sources.apiKey})`, `tenant     ${view.tenant_id ?? "(key's default)"}  (${resolved.sources.tenantId})`, `config     ${view.config_path}`].join("\n")
        )
      })
    )
  return program
}

/** Prints an error (JSON on stdout with --json, else a line on stderr) and returns its exit code. */
const report = (error: unknown, output: Output): number => {
  const failure =
    error instanceof CliError ? error : new CliError(ExitCode.failure, "UnexpectedError", `unexpected error: ${error instanceof Error ? error.message : String(error)}`)
  if (output.json) {
    const details = failure.details as { result?: unknown } | undefined
    process.stdout.write(
      `${JSON.stringify({ error: { kind: failure.kind, message: failure.message, exit_code: failure.exitCode }, ...(details?.result ? { result: details.result } : {}) }, null, 2)}\n`
    )
  }
  process.stderr.write(`slipway: ${failure.message.split("\n").join("\nslipway: ")}\n`)
  return failure.exitCode
}

/** Parses `argv` (without node and the script) and runs the command; resolves with the exit code. */
export const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  let code: number = ExitCode.ok
  const program = makeProgram((result) => (code = result))
  program.configureOutput({ writeErr: (text) => process.stderr.write(text), writeOut: (text) => process.stdout.write(text) })
  try {
    await program.parseAsync([...argv], { from: "user" })
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here with exit code 0; every other parse error is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage
    }
    throw error
  }
  return code
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
})()

if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (error) => {
      process.stderr.write(`slipway: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exitCode = ExitCode.failure
    }
  )
}
