/**
 * Load generation with autocannon, in this process, against a server in a child process.
 * Latency percentiles are computed here from autocannon's per-response timings (float ms), not
 * from its histogram, which rounds to whole milliseconds.
 */
import autocannon from "autocannon"

export interface BenchRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
}

export interface LoadOptions {
  readonly url: string
  readonly connections: number
  readonly durationSeconds: number
  /** Called for every request with its connection's number (0 to connections - 1): returns what to send next. */
  readonly next: (connection: number) => BenchRequest
}

export interface LoadResult {
  readonly requests: number
  readonly ok: number
  readonly non2xx: number
  readonly errors: number
  readonly statusCodes: Record<string, number>
  readonly durationSeconds: number
  /** 2xx answers per second. */
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
}

export const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

/** Records the latency (float ms) of every 2xx answer of an autocannon run; call the result once the run is over for them sorted. */
export const collectLatencies = (instance: { on: (event: "response", listener: (client: unknown, status: number, bytes: number, ms: number) => void) => unknown }) => {
  let latencies = new Float64Array(1 << 16)
  let count = 0
  instance.on("response", (_client, status, _bytes, ms) => {
    if (status < 200 || status >= 300) return
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2)
      grown.set(latencies)
      latencies = grown
    }
    latencies[count++] = ms
  })
  return (): Float64Array => latencies.subarray(0, count).sort()
}

export const runLoad = async (options: LoadOptions): Promise<LoadResult> => {
  let connections = 0
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    pipelining: 1,
    timeout: 30,
    // Each connection gets a copy of `requests`: number it, then rebuild the request that
    // autocannon prepared before this hook ran.
    setupClient: (client: { requestIterator: { requests: Array<Record<string, unknown>>; rebuildRequest: () => void } }) => {
      client.requestIterator.requests[0]!.connection = connections++ % options.connections
      client.requestIterator.rebuildRequest()
    },
    requests: [
      {
        setupRequest: (request: Record<string, unknown>) => {
          const next = options.next((request.connection as number | undefined) ?? 0)
          request.method = next.method
          request.path = next.path
          request.headers = next.body === undefined ? next.headers : { ...next.headers, "content-type": "application/json" }
          request.body = next.body
          return request
        }
      }
    ]
  })
  const sortedLatencies = collectLatencies(instance)
  const result = await instance
  const sorted = sortedLatencies()
  const count = sorted.length
  const statusCodes: Record<string, number> = {}
  for (const [code, { count: n }] of Object.entries(result.statusCodeStats as Record<string, { count: number }>)) statusCodes[code] = Number(n)
  const durationSeconds = (new Date(result.finish).getTime() - new Date(result.start).getTime()) / 1000
  return {
    requests: count + Number(result.non2xx),
    ok: count,
    non2xx: Number(result.non2xx),
    errors: Number(result.errors),
    statusCodes,
    durationSeconds,
    rps: count / durationSeconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length ? sorted[sorted.length - 1]! : NaN
  }
}
