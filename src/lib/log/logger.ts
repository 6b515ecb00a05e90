// The one logger of the plugins and the agent (docs/logging.md): one line per event, written synchronously with
// one write(2) per line to each sink, so a process that exits right after (a plugin) loses nothing and
// concurrent processes appending to one file never interleave. Deliberately tiny: a plugin ADD loads it on its
// start-up path (docs/startup.md).
import {encodeJson} from '../codec/gojson.js'

export type Level = 'error' | 'warning' | 'info' | 'debug'
const RANK: Record<Level, number> = {error: 0, warning: 1, info: 2, debug: 3}
export const LEVELS: readonly Level[] = ['error', 'warning', 'info', 'debug']

/**
 * A level as the netconf or a flag spells it, Calico's spellings included (`WARNING`, `warn`, `Info`…);
 * `fatal` and `panic` count as error, `trace` as debug. undefined when it is none of them.
 */
export function parseLevel(text: string | undefined): Level | undefined {
  switch ((text ?? '').trim().toLowerCase()) {
    case 'error':
    case 'fatal':
    case 'panic':
      return 'error'
    case 'warn':
    case 'warning':
      return 'warning'
    case 'info':
      return 'info'
    case 'debug':
    case 'trace':
      return 'debug'
    default:
      return undefined
  }
}

export type FieldValue = string | number | boolean | readonly string[] | undefined
export type Fields = Record<string, FieldValue>

/** Where lines go: each call gets one whole line ending in a newline. */
export interface LogSink {
  write(line: string): void
}

export interface LoggerOptions {
  level: Level
  /** text: `TIME [LEVEL][PID] CONTEXT: message fields`; json: one JSON object per line (the agent's option). */
  format?: 'text' | 'json'
  /** Who is logging (text: the word after the pid), e.g. `ipamctl-cni ADD` or `agent`. */
  component: string
  /** Fields on every line: container, netns, pod… */
  context?: Fields
  sinks: LogSink[]
  /** Values never to be written (passwords, tokens, key material): replaced by [REDACTED] wherever they appear. */
  secrets?: readonly string[]
  now?: () => Date
  /** The process the lines are about: this one unless the agent logs a plugin's invocation for it (its pid). */
  pid?: number
}

export interface Logger {
  readonly level: Level
  enabled(level: Level): boolean
  error(msg: string, fields?: Fields): void
  warn(msg: string, fields?: Fields): void
  info(msg: string, fields?: Fields): void
  debug(msg: string, fields?: Fields): void
  /** A value learnt later (a password read from a config file) that must never be written either. */
  addSecret(value: string | undefined): void
}

export const REDACTED = '[REDACTED]'

const isWordChar = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f

/**
 * Whether a field name's values are secrets wherever they come from (netconf keys, environment, log fields):
 * it holds `passw`, `secret`, `token`, `credential` or `private`; `pass` or `auth` (but not `authority`) as a
 * word of its own or a word's start; `key` alone, as its first word, or as its last after `_` or `-`. Case is
 * ignored. The rule of the regular expression
 * `/pass(word|wd)?\b|passw|secret|token|credential|private|(^|[_-])key$|^key\b|auth(?!ority)/i`, written out
 * because a plugin process tests it on every netconf key and variable it logs: compiling that expression
 * (twice, as V8 tiers it up) was ~1.2 million instructions of an ~116 million ADD through the agent
 * (docs/startup.md#counting-instructions-instead-of-milliseconds). test/lib/log/logger.test.ts holds the two equal on ASCII names;
 * lowering a name also turns the Kelvin sign and the dotted capital I into ASCII letters, which can only
 * redact more.
 */
export function isSecretName(name: string): boolean {
  const s = name.toLowerCase()
  if (
    s.includes('passw') ||
    s.includes('secret') ||
    s.includes('token') ||
    s.includes('credential') ||
    s.includes('private')
  )
    return true
  // A word boundary after `pass` (charCodeAt past the end is NaN: not a word character).
  for (let i = s.indexOf('pass'); i >= 0; i = s.indexOf('pass', i + 1))
    if (!isWordChar(s.charCodeAt(i + 4))) return true
  for (let i = s.indexOf('auth'); i >= 0; i = s.indexOf('auth', i + 1)) if (!s.startsWith('ority', i + 4)) return true
  // `key` alone is the last line's case: nothing follows it.
  if (s.endsWith('key') && (s[s.length - 4] === '_' || s[s.length - 4] === '-')) return true
  return s.startsWith('key') && !isWordChar(s.charCodeAt(3))
}

/** Key material written into a message (a PEM block) is cut out whole. */
const PEM = /-----BEGIN [^-]*-----[\s\S]*?(-----END [^-]*-----|$)/g

/** Secrets shorter than this are not searched for in text (a one-letter "password" would redact every line). */
const MIN_SECRET = 4

function quote(v: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a value with control characters must be quoted
  return v !== '' && /^[^\s"=\\\u0000-\u001f\u007f]+$/.test(v) ? v : JSON.stringify(v)
}

function fieldText(v: Exclude<FieldValue, undefined>): string {
  return Array.isArray(v) ? v.join(',') : String(v)
}

/** One line per message: newlines and other control characters escaped, nothing else changed. */
function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escaping exactly the control characters is the point
  return /[\u0000-\u001f\u007f]/.test(text) ? JSON.stringify(text).slice(1, -1) : text
}

export function createLogger(o: LoggerOptions): Logger {
  const rank = RANK[o.level]
  const secrets = new Set((o.secrets ?? []).filter((s) => s.length >= MIN_SECRET))
  const now = o.now ?? (() => new Date())
  const pid = o.pid ?? process.pid
  const scrub = (line: string): string => {
    let out = line.includes('-----BEGIN ') ? line.replace(PEM, REDACTED) : line
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED)
    return out
  }
  const value = (k: string, v: Exclude<FieldValue, undefined>): string => (isSecretName(k) ? REDACTED : fieldText(v))
  const text = (level: Level, msg: string, fields: Fields | undefined): string => {
    let ctx = ''
    for (const [k, v] of Object.entries(o.context ?? {}))
      if (v !== undefined && v !== '') ctx += ` ${k}=${quote(value(k, v))}`
    let tail = ''
    for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined) tail += ` ${k}=${quote(value(k, v))}`
    return `${now().toISOString()} [${level.toUpperCase()}][${pid}] ${o.component}${ctx}: ${oneLine(msg)}${tail}\n`
  }
  const json = (level: Level, msg: string, fields: Fields | undefined): string => {
    const obj: Record<string, unknown> = {time: now().toISOString(), level, pid, component: o.component}
    for (const [k, v] of Object.entries({...o.context, msg, ...fields}))
      if (v !== undefined && !(k in obj)) obj[k] = k !== 'msg' && isSecretName(k) ? REDACTED : v
    return `${encodeJson(obj)}\n`
  }
  const format = o.format === 'json' ? json : text
  const emit = (level: Level, msg: string, fields?: Fields) => {
    if (RANK[level] > rank) return
    const line = scrub(format(level, msg, fields))
    for (const s of o.sinks) s.write(line)
  }
  return {
    level: o.level,
    enabled: (level) => RANK[level] <= rank,
    error: (m, f) => emit('error', m, f),
    warn: (m, f) => emit('warning', m, f),
    info: (m, f) => emit('info', m, f),
    debug: (m, f) => emit('debug', m, f),
    addSecret(v) {
      if (v && v.length >= MIN_SECRET) secrets.add(v)
    },
  }
}

/** The values of secret-named keys in a netconf-like object (any depth) or environment. */
export function secretValues(obj: unknown, out: string[] = []): string[] {
  if (typeof obj !== 'object' || obj === null) return out
  for (const [k, v] of Object.entries(obj)) {
    if (typeof v === 'string' && isSecretName(k) && !/file$|path$/i.test(k)) out.push(v)
    else if (typeof v === 'object') secretValues(v, out)
  }
  return out
}

/** A copy of a netconf-like object with the values of secret-named keys replaced by [REDACTED]. */
export function redactSecrets(obj: unknown): unknown {
  if (Array.isArray(obj)) return obj.map(redactSecrets)
  if (typeof obj !== 'object' || obj === null) return obj
  return Object.fromEntries(
    Object.entries(obj).map(([k, v]) => [
      k,
      typeof v === 'string' && isSecretName(k) && !/file$|path$/i.test(k) ? REDACTED : redactSecrets(v),
    ]),
  )
}

/** A logger that writes nothing (tests, and callers that were given none). */
export const silentLogger: Logger = createLogger({level: 'error', component: '', sinks: []})

/**
 * A plain line-callback as a logger (the callers that predate levels): each message at `level` and up as its
 * text with its fields, prefixed `warning: ` or `error: ` above info.
 */
export function lineLogger(log: (line: string) => void, level: Level = 'info'): Logger {
  const write = (l: string) => {
    const lv = /^\S+ \[([A-Z]+)\]/.exec(l)?.[1]
    const text = l.slice(l.indexOf('] : ') + 4, -1)
    log(lv === 'WARNING' || lv === 'ERROR' ? `${lv.toLowerCase()}: ${text}` : text)
  }
  return createLogger({level, component: '', sinks: [{write}]})
}
