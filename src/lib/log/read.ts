// `ipamctl cni logs`: the plugin log file and its rotations read back, filtered to one container or pod and put
// in time order (docs/logging.md#reading-a-pods-story). Reads only.
import fs from 'node:fs'
import path from 'node:path'
import {NotFoundError, ValidationError} from '../errors.js'
import {REPORT_MAX_BYTES, readTextFile} from '../files.js'

export interface ParsedLine {
  time: string
  level: string
  context: Record<string, string>
}

const HEAD =
  /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) \[([A-Z]+)\]\[\d+\] (?:[^\s:=]+ )*?[^\s:=]+((?: \w+=(?:"(?:[^"\\]|\\.)*"|[^\s"]*))*): /
const PAIR = / (\w+)=("(?:[^"\\]|\\.)*"|[^\s"]*)/g

/** The time, level and context fields of a plugin log line (the text format of createLogger); undefined otherwise. */
export function parseLogLine(text: string): ParsedLine | undefined {
  const m = HEAD.exec(text)
  if (!m) return undefined
  const context: Record<string, string> = {}
  for (const [, k, v] of m[3]!.matchAll(PAIR)) {
    try {
      context[k!] = v!.startsWith('"') ? (JSON.parse(v!) as string) : v!
    } catch {
      context[k!] = v!
    }
  }
  return {time: m[1]!, level: m[2]!, context}
}

/** The log file's rotations that exist, oldest first (`<file>.<n>`, highest n first), then the file itself. */
export function logFiles(file: string): string[] {
  const dir = path.dirname(file)
  const base = path.basename(file)
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch (err) {
    throw new NotFoundError(`cannot read the log directory ${dir}: ${(err as NodeJS.ErrnoException).code}`)
  }
  const rotated = names
    .map((n) =>
      n.startsWith(`${base}.`) && /^\d+$/.test(n.slice(base.length + 1)) ? Number(n.slice(base.length + 1)) : 0,
    )
    .filter((n) => n > 0)
    .sort((a, b) => b - a)
    .map((n) => path.join(dir, `${base}.${n}`))
  const all = [...rotated, ...(names.includes(base) ? [file] : [])]
  if (all.length === 0)
    throw new NotFoundError(`no log file at ${file}: is log_file_path set in the CNI netconf (docs/logging.md)?`)
  return all
}

export interface LogQuery {
  container?: string
  /** `namespace/name`. */
  pod?: string
  /** Only lines at or after this time. */
  since?: Date
}

/**
 * The lines of `file` and its rotations that match `q`, in time order (lines of one moment can sit in two
 * neighbouring files, docs/logging.md#the-log-file). With `pod`, also the lines of that pod's containers that do
 * not name the pod (a DEL without CNI_ARGS). Without any filter, every line; a line that is not the plugins' then
 * keeps its place after the line before it.
 */
export function readPodStory(file: string, q: LogQuery): string[] {
  if (q.pod !== undefined && !/^[^/\s]+\/[^/\s]+$/.test(q.pod))
    throw new ValidationError(`--pod ${q.pod}: use NAMESPACE/NAME`)
  const filtered = q.container !== undefined || q.pod !== undefined || q.since !== undefined
  const lines: {time: string; text: string; ctx?: Record<string, string>}[] = []
  let last = ''
  for (const f of logFiles(file)) {
    for (const text of readTextFile(f, 'log file', REPORT_MAX_BYTES).split('\n')) {
      if (text === '') continue
      const p = parseLogLine(text)
      if (p) last = p.time
      else if (filtered) continue
      lines.push({time: p?.time ?? last, text, ctx: p?.context})
    }
  }
  const podContainers = new Set(
    q.pod === undefined
      ? []
      : lines.flatMap((l) => (l.ctx?.pod === q.pod && l.ctx?.container ? [l.ctx.container] : [])),
  )
  const since = q.since?.toISOString()
  const keep = lines.filter(
    (l) =>
      (q.container === undefined || l.ctx?.container === q.container) &&
      (q.pod === undefined || l.ctx?.pod === q.pod || podContainers.has(l.ctx?.container ?? '')) &&
      (since === undefined || l.time >= since),
  )
  // Array.prototype.sort is stable: lines of the same millisecond keep their file order.
  return keep.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0)).map((l) => l.text)
}
