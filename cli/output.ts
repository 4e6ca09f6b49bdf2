/** How the CLI prints: one JSON document on stdout with `--json`, plain text otherwise; progress and errors on stderr. */

export interface Output {
  readonly json: boolean
  /** The command's result: `value` as JSON, or `human()` as text. */
  readonly result: (value: unknown, human: () => string) => void
  /** A progress or informational line on stderr (kept out of stdout, which scripts read). */
  readonly progress: (line: string) => void
}

export const makeOutput = (json: boolean): Output => ({
  json,
  result: (value, human) => {
    if (json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
    else {
      const text = human()
      if (text !== "") process.stdout.write(text.endsWith("\n") ? text : `${text}\n`)
    }
  },
  progress: (line) => void process.stderr.write(`${line}\n`)
})

/** Columns padded to their widest cell; the last column is not padded. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join("  ")
      .trimEnd()
  return [line(headers), ...rows.map(line)].join("\n")
}
