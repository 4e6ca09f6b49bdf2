/**
 * The test image the local deployment suites deploy: busybox serving /tmp/www on $PORT, with
 * `ok`, `version` (the VERSION secret) and `env` (its environment), pushed to `registry`.
 */
import { buildTestImages } from "../support/images.ts"
import { runCommand } from "../support/run.ts"
import type { TestRegistry } from "../support/registry.ts"

export const pushVersionedImage = async (registry: TestRegistry): Promise<string> => {
  const layout = await buildTestImages()
  const script = [
    "mkdir -p /tmp/www",
    "echo ok > /tmp/www/ok",
    'echo "$VERSION" > /tmp/www/version',
    "env > /tmp/www/env",
    'echo "serving $VERSION on $PORT"',
    "exec httpd -f -p $PORT -h /tmp/www"
  ].join(" && ")
  await runCommand(["umoci", "config", "--image", `${layout}:busybox`, "--tag", "versioned", "--clear=config.cmd", "--config.cmd", "/bin/sh", "--config.cmd", "-c", "--config.cmd", script], {
    timeoutMs: 60_000
  })
  const versioned = `${registry.host}/slipway-test/versioned:1`
  await runCommand(["skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", "--dest-no-creds", `oci:${layout}:versioned`, `docker://${versioned}`], { timeoutMs: 120_000 })
  return versioned
}
