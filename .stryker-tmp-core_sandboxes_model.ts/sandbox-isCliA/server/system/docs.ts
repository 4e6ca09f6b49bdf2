/** Renders the OpenAPI document as a self-contained HTML reference (no external assets: the server may run offline). */
// @ts-nocheck


const escape = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

export const renderDocs = (document: Record<string, any>): string => {
  const sections: Array<string> = []
  for (const [path, operations] of Object.entries<Record<string, any>>(document.paths ?? {})) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      const parameters = (operation.parameters ?? [])
        .map((p: any) => `<li><code>${escape(p.name)}</code> (${p.in}${p.required ? ", required" : ""})</li>`)
        .join("")
      const body = operation.requestBody
        ? `<details><summary>Request body</summary><pre>${escape(JSON.stringify(operation.requestBody.content["application/json"].schema, null, 2))}</pre></details>`
        : ""
      const responses = Object.entries<any>(operation.responses ?? {})
        .map(([status, response]) => `<li><b>${status}</b> ${escape(response.description ?? "")}</li>`)
        .join("")
      sections.push(`<section id="${escape(operation.operationId)}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p>${escape(operation.summary ?? "")} <small>(${escape(operation.operationId)}${operation.security ? ", needs X-Api-Key" : ""})</small></p>
${parameters ? `<ul>${parameters}</ul>` : ""}${body}<ul>${responses}</ul></section>`)
    }
  }
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(document.info.title)} API</title>
<style>body{font:15px system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}section{border-top:1px solid #ddd;padding:.5em 0}
.m{font-family:monospace;padding:2px 6px;border-radius:4px;color:#fff;background:#555}.get{background:#2b6cb0}.post{background:#2f855a}
.patch{background:#b7791f}.delete{background:#c53030}pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head>
<body><h1>${escape(document.info.title)} <small>${escape(document.info.version)}</small></h1>
<p>${escape(document.info.description ?? "")} The machine-readable document is at <a href="/openapi.json">/openapi.json</a>.</p>
${sections.join("\n")}</body></html>`
}
