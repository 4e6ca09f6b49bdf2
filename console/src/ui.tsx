/** Small shared pieces: status badges, error boxes, the confirmation dialog, polling, times and sizes. */
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError } from "./api.ts"

const tone = (status: string): string => {
  const s = status.toUpperCase()
  if (["DEPLOYED", "READY", "RUNNING"].includes(s)) return "ok"
  if (s.endsWith("_FAILED") || s === "FAILED" || s === "ERROR" || s === "CRITICAL") return "bad"
  if (["SKIPPED", "INTERRUPTED", "UNUSED", "STOPPED", "UNKNOWN", "DEBUG"].includes(s)) return "muted"
  if (["AWAITING_DELETE", "WARNING"].includes(s)) return "warn"
  return "busy"
}

export const Status = ({ value }: { value: string }) => (
  <span class={`badge ${tone(value)}`} data-status={value}>
    {value}
  </span>
)

/** An error next to the form or view it belongs to; `role=alert` so it is announced. */
export const ErrorBox = ({ error, signingIn }: { error: unknown; signingIn?: boolean }) => {
  if (!error) return null
  const lines = error instanceof ApiError ? error.lines : [String((error as Error)?.message ?? error)]
  const status = error instanceof ApiError && error.status > 0 ? error.status : undefined
  return (
    <div class="error" role="alert">
      {status ? <strong>Error {status}</strong> : <strong>Error</strong>}
      {lines.length === 1 ? <span> {lines[0]}</span> : <ul>{lines.map((line) => <li>{line}</li>)}</ul>}
      {status === 401 && !signingIn && <div class="small">The key was refused (revoked?): sign out and sign in with a valid key.</div>}
    </div>
  )
}

export const Empty = ({ children }: { children: ComponentChildren }) => <p class="empty">{children}</p>

/**
 * An action started from a form or a button: its busy flag and its error (shown by `ErrorBox`).
 * `run(event?)` prevents the form's default, runs `action` once at a time, and keeps `busy` after
 * a success when `stayBusy` (the page navigates away); a failure shows the error and re-enables.
 */
export const useAction = (action: () => Promise<unknown> | unknown, options: { readonly stayBusy?: boolean } = {}) => {
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const run = async (event?: Event) => {
    event?.preventDefault()
    if (busy) return
    setBusy(true)
    setError(null)
    try {
      await action()
      if (!options.stayBusy) setBusy(false)
    } catch (cause) {
      setError(cause)
      setBusy(false)
    }
  }
  return { error, busy, run }
}

/** A modal confirmation (the native <dialog>): resolves through `onConfirm` or `onCancel`. */
export const Confirm = (props: {
  title: string
  children: ComponentChildren
  action: string
  danger?: boolean
  onConfirm: () => Promise<void> | void
  onCancel: () => void
}) => {
  const ref = useRef<HTMLDialogElement>(null)
  const { error, busy, run: confirm } = useAction(props.onConfirm, { stayBusy: true })
  useEffect(() => {
    const dialog = ref.current
    if (dialog && !dialog.open) dialog.showModal()
  }, [])
  return (
    <dialog ref={ref} class="confirm" onCancel={(event) => (event.preventDefault(), props.onCancel())}>
      <h3>{props.title}</h3>
      <div>{props.children}</div>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class={props.danger ? "danger" : "primary"} disabled={busy} onClick={() => confirm()}>
          {props.action}
        </button>
      </div>
    </dialog>
  )
}

/**
 * Loads with `load` now and then every `intervalMs` (while the tab is visible), keeping the last
 * good value when a refresh fails. `reload()` refreshes at once.
 */
export const usePoll = <T,>(load: (signal: AbortSignal) => Promise<T>, intervalMs: number, deps: ReadonlyArray<unknown>) => {
  const [value, setValue] = useState<T | undefined>(undefined)
  const [error, setError] = useState<unknown>(null)
  const [tick, setTick] = useState(0)
  const loadRef = useRef(load)
  loadRef.current = load
  useEffect(() => {
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const controller = new AbortController()
    const run = async () => {
      try {
        const next = await loadRef.current(controller.signal)
        if (stopped) return
        setValue(next)
        setError(null)
      } catch (cause) {
        if (stopped || (cause as Error)?.name === "AbortError") return
        setError(cause)
      }
      if (!stopped) timer = setTimeout(run, document.hidden ? intervalMs * 5 : intervalMs)
    }
    void run()
    return () => {
      stopped = true
      controller.abort()
      clearTimeout(timer)
    }
  }, [...deps, tick, intervalMs])
  return { value, error, reload: () => setTick((n) => n + 1) }
}

export const Time = ({ iso }: { iso: string | number | null | undefined }) => {
  if (iso === null || iso === undefined) return <span class="muted">—</span>
  const date = new Date(iso)
  return <time dateTime={date.toISOString()} title={date.toISOString()}>{date.toLocaleString()}</time>
}

const binary: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 }
const decimal: Record<string, number> = { "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3 }

/** Bytes of a Kubernetes quantity ("10Gi", "500M", "1e9"), for display; NaN when unreadable. */
export const quantityBytes = (text: string): number => {
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)|[eE]([+-]?\d+))?$/.exec(text.trim())
  if (!match) return Number.NaN
  const number = Number(match[1])
  if (match[2]) return number * (binary[match[2]] ?? decimal[match[2]] ?? Number.NaN)
  if (match[3]) return number * 10 ** Number(match[3])
  return number
}

export const formatBytes = (bytes: number): string => {
  if (!Number.isFinite(bytes)) return "?"
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
  let value = bytes
  let unit = 0
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 2 : 1).replace(/\.?0+$/, "")} ${units[unit]}`
}
