/**
 * A GitHub push webhook delivery, as GitHub sends it for a push of `sha` to a branch of a
 * repository: the JSON body, signed with the integration's webhook secret (`X-Hub-Signature-256`),
 * with a fresh `X-GitHub-Delivery`. Spread it into a request: `{ key: null, ...pushDelivery(…) }`.
 */
import { createHmac, randomUUID } from "node:crypto"

export const pushDelivery = (secret: string, repoUrl: string, fullName: string, sha: string, branch = "main") => {
  const raw = JSON.stringify({
    ref: `refs/heads/${branch}`,
    before: "0".repeat(40),
    after: sha,
    repository: { full_name: fullName, html_url: repoUrl.replace(/\.git$/, ""), clone_url: repoUrl, owner: { login: fullName.split("/")[0], name: fullName.split("/")[0] } },
    pusher: { name: "someone" },
    commits: []
  })
  return {
    raw,
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`
    }
  }
}
