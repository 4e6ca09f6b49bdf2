/**
 * One output stream of a command (stdout or stderr) as the protocol sees it: UTF-8 text addressed
 * by byte offsets, kept in a bounded ring for replay on reconnect.
 *
 * Raw process bytes go through a streaming UTF-8 decoder first (a character split across two reads
 * is joined; invalid bytes become U+FFFD), and the log stores the re-encoded text. Offsets count
 * bytes of that canonical UTF-8, which is exactly what clients count (`offset + utf8(data).length`),
 * and every stored chunk, trim point and frame split sits on a character boundary, so a `data`
 * string never carries half a character.
 */

export interface OutputChunk {
  /** Byte offset of `data` in the stream. */
  readonly offset: number
  /** Whole UTF-8 characters. */
  readonly data: Buffer
}

const isContinuation = (byte: number) => (byte & 0xc0) === 0x80

/** The first character boundary at or after `index`. */
export const boundaryAtOrAfter = (buffer: Buffer, index: number): number => {
  let at = Math.max(0, index)
  while (at < buffer.length && isContinuation(buffer[at]!)) at++
  return Math.min(at, buffer.length)
}

/** Splits whole-character UTF-8 into pieces of at most `max` bytes (a piece may exceed `max` only if one character does). */
export const splitUtf8 = (chunk: OutputChunk, max: number): Array<OutputChunk> => {
  const { data, offset } = chunk
  if (data.length <= max) return [chunk]
  const pieces: Array<OutputChunk> = []
  let from = 0
  while (from < data.length) {
    let to = Math.min(data.length, from + max)
    while (to < data.length && to > from && isContinuation(data[to]!)) to--
    if (to === from) to = boundaryAtOrAfter(data, from + 1)
    pieces.push({ offset: offset + from, data: data.subarray(from, to) })
    from = to
  }
  return pieces
}

export class OutputLog {
  /** Made on the first output: most commands (`true`, a `mkdir`) print nothing, and a decoder costs an ICU converter. */
  private decoder: InstanceType<typeof TextDecoder> | undefined
  private chunks: Array<OutputChunk> = []
  private retained = 0
  /** Offset of the earliest byte still retained. */
  start = 0
  /** Bytes written so far (offset of the next byte). */
  end = 0
  private readonly limit: number

  constructor(limit: number) {
    this.limit = Math.max(4, limit)
  }

  /** Feeds raw process output; answers the canonical bytes it adds (none while a character is incomplete). */
  append(raw: Buffer): OutputChunk | undefined {
    this.decoder ??= new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })
    return this.push(this.decoder.decode(raw, { stream: true }))
  }

  /** Flushes a trailing incomplete character (as U+FFFD) at end of stream. */
  finish(): OutputChunk | undefined {
    return this.decoder ? this.push(this.decoder.decode()) : undefined
  }

  private push(text: string): OutputChunk | undefined {
    if (text === "") return undefined
    const chunk = { offset: this.end, data: Buffer.from(text, "utf8") }
    this.chunks.push(chunk)
    this.end += chunk.data.length
    this.retained += chunk.data.length
    this.trim()
    return chunk
  }

  private trim(): void {
    while (this.retained > this.limit && this.chunks.length > 0) {
      const first = this.chunks[0]!
      const excess = this.retained - this.limit
      if (first.data.length <= excess) {
        this.chunks.shift()
        this.retained -= first.data.length
        this.start = first.offset + first.data.length
        continue
      }
      const cut = boundaryAtOrAfter(first.data, excess)
      // Copy so the dropped prefix's memory is released.
      this.chunks[0] = { offset: first.offset + cut, data: Buffer.from(first.data.subarray(cut)) }
      this.retained -= cut
      this.start = first.offset + cut
    }
    if (this.chunks.length === 0) this.start = this.end
  }

  /** Retained output from byte `from` on (from the earliest retained byte if `from` was trimmed), split into frames. */
  readFrom(from: number, maxFrame: number): Array<OutputChunk> {
    const out: Array<OutputChunk> = []
    const begin = Math.max(from, this.start)
    for (const chunk of this.chunks) {
      const chunkEnd = chunk.offset + chunk.data.length
      if (chunkEnd <= begin) continue
      let piece = chunk
      if (chunk.offset < begin) {
        const cut = boundaryAtOrAfter(chunk.data, begin - chunk.offset)
        if (cut >= chunk.data.length) continue
        piece = { offset: chunk.offset + cut, data: chunk.data.subarray(cut) }
      }
      out.push(...splitUtf8(piece, maxFrame))
    }
    return out
  }
}
