// JSON as Go's encoding/json writes it, and a parser that keeps integers above 2^53 exact.
// Calico's block sequence numbers are uint64 nanosecond timestamps (~1.77e18): JSON.parse would round them,
// and a rounded sequence number makes every guarded release fail. Byte-for-byte output matters because
// Calico tooling reads what we write and our tests compare stored bytes.
import {ValidationError} from '../errors.js'

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | {[k: string]: JsonValue}

// Integers too long to be exact as doubles, outside strings (the alternation consumes whole strings first).
const TOKEN = /"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d{16,}(?![\d.eE])/g
const BIG_TAG = '\u0000bigint:'
const LONG_DIGITS = /\d{16}/

export function nativeParse(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue
  } catch (err) {
    throw new ValidationError(`malformed JSON: ${(err as Error).message}`)
  }
}

/**
 * Parse JSON; integers outside the safe range come back as bigint. Long integer literals are tagged as
 * strings before the native parser runs and turned back into bigints by a walk, so parsing stays native-fast.
 */
export function parseJson(text: string): JsonValue {
  if (!LONG_DIGITS.test(text)) return nativeParse(text)
  let tagged = false
  const prepared = text.replace(TOKEN, (tok) => {
    if (tok.startsWith('"')) return tok
    tagged = true
    // Written as the escape \u0000 (a raw NUL is invalid JSON); JSON.parse turns it into BIG_TAG.
    return `"\\u0000bigint:${tok}"`
  })
  const parsed = nativeParse(prepared)
  // A walk is much cheaper than a JSON.parse reviver, which V8 runs on its slow path for every value.
  return tagged ? restoreBig(parsed) : parsed
}

function restoreBig(v: JsonValue): JsonValue {
  if (typeof v === 'string') {
    if (!v.startsWith(BIG_TAG)) return v
    const digits = v.slice(BIG_TAG.length)
    const n = Number(digits)
    return Number.isSafeInteger(n) ? n : BigInt(digits)
  }
  if (v === null || typeof v !== 'object') return v
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++)
      if (typeof v[i] === 'string' || (v[i] !== null && typeof v[i] === 'object')) v[i] = restoreBig(v[i]!)
    return v
  }
  for (const k of Object.keys(v)) v[k] = restoreBig(v[k]!)
  return v
}

const GO_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
}

// With HTML escaping off (Go's Encoder.SetEscapeHTML(false)) <, > and & are written as they are.
const ESCAPED_HTML =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: JSON escapes every control character
  /["\\\u0000-\u001f<>&\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g
const ESCAPED_PLAIN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: JSON escapes every control character
  /["\\\u0000-\u001f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

function escapeChar(c: string): string {
  const known = GO_ESCAPES[c]
  if (known) return known
  const code = c.charCodeAt(0)
  if (code >= 0xd800 && code <= 0xdfff) return '\ufffd'
  return `\\u${code.toString(16).padStart(4, '0')}`
}

function goString(s: string, escapeHtml: boolean): string {
  // Go escapes <, > and & (HTML safety, unless turned off) and U+2028/2029; lone surrogates are invalid UTF-8
  // and become U+FFFD.
  const re = escapeHtml ? ESCAPED_HTML : ESCAPED_PLAIN
  re.lastIndex = 0
  if (!re.test(s)) return `"${s}"`
  return `"${s.replace(re, escapeChar)}"`
}

/** Already-encoded JSON to splice in verbatim (e.g. Go's `null` for a nil slice next to `[]`). */
export class RawJson {
  constructor(readonly text: string) {}
}

export interface JsonLayout {
  /**
   * One level of indentation, as Go's json.MarshalIndent(v, "", indent) lays it out (`"key": value`, one member
   * per line, `[]` and `{}` when empty). Absent: json.Marshal's compact form.
   */
  indent?: string
  /** false: write <, > and & unescaped, as Go's Encoder.SetEscapeHTML(false) does. Default true, as json.Marshal. */
  escapeHtml?: boolean
}

/**
 * Encode like Go's json.Marshal: no whitespace, object keys in insertion order (callers build objects in
 * Go struct-field order), `undefined` members omitted (omitempty), bigint written as plain digits (negative ones
 * with their sign). With `layout.indent`, laid out as json.MarshalIndent does. RawJson is spliced as it is.
 */
export function encodeJson(v: unknown, layout?: JsonLayout): string {
  return encodeValue(v, layout?.escapeHtml ?? true, layout?.indent, '')
}

/** `indent` undefined: compact. `pad`: the indentation of the line `v` starts on. */
function encodeValue(v: unknown, html: boolean, indent: string | undefined, pad: string): string {
  if (v === null) return 'null'
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false'
    case 'bigint':
      return v.toString()
    case 'number':
      if (!Number.isFinite(v)) throw new TypeError('cannot encode a non-finite number')
      return String(v)
    case 'string':
      return goString(v, html)
    case 'object': {
      if (v instanceof RawJson) return v.text
      const inner = indent === undefined ? '' : pad + indent
      if (Array.isArray(v)) {
        if (v.length === 0) return '[]'
        return wrap(
          '[',
          ']',
          v.map((x) => encodeValue(x ?? null, html, indent, inner)),
          indent,
          pad,
        )
      }
      const parts: string[] = []
      const colon = indent === undefined ? ':' : ': '
      // A Map keeps its own order; plain objects would put integer-like keys first in numeric order.
      const entries =
        v instanceof Map ? [...(v as Map<string, unknown>).entries()] : Object.entries(v as Record<string, unknown>)
      for (const [k, x] of entries) {
        if (x !== undefined) parts.push(`${goString(k, html)}${colon}${encodeValue(x, html, indent, inner)}`)
      }
      if (parts.length === 0) return '{}'
      return wrap('{', '}', parts, indent, pad)
    }
    default:
      throw new TypeError(`cannot encode ${typeof v}`)
  }
}

function wrap(open: string, close: string, items: string[], indent: string | undefined, pad: string): string {
  if (indent === undefined) return `${open}${items.join(',')}${close}`
  const inner = pad + indent
  return `${open}\n${inner}${items.join(`,\n${inner}`)}\n${pad}${close}`
}

/** Go's json.MarshalIndent(v, "", "    "), as the CNI Go library prints results and errors (no newline). */
export const goIndent = (value: unknown): string => encodeJson(value, {indent: '    '})

/** Go's json.NewEncoder(w).Encode(v): compact, newline-terminated (the CNI VERSION answer). */
export const goEncodeLine = (value: unknown): string => `${encodeJson(value)}\n`

/** Go's %q for a string (strconv.Quote), close enough for messages: a JSON string with Go's escapes. */
export const goQuote = (text: string): string => goString(text, true)

/** Go's %q for a []string: `["a" "b"]`. */
export const goQuoteList = (items: readonly string[]): string => `[${items.map(goQuote).join(' ')}]`

/**
 * Order of UTF-8 bytes (Go map keys, etcd and SQLite keys), which differs from JS's UTF-16 order only where a
 * surrogate (an astral character, or a lone one that UTF-8 writes as U+FFFD) meets a code unit from U+D800 up.
 * Below that, UTF-16 code units sort as code points and so as their UTF-8 bytes: the common case compares in
 * place, without encoding (a block's encode sorts ~60 sequence-number keys per allocation).
 */
export function compareBytes(a: string, b: string): number {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++
  if (i === n) return a.length < b.length ? -1 : 1
  const x = a.charCodeAt(i)
  const y = b.charCodeAt(i)
  if (x < 0xd800 && y < 0xd800) return x < y ? -1 : 1
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** Go sorts map keys bytewise when marshalling ("10" before "2"); encodeJson keeps a Map's order. */
export function goMap<T>(m: ReadonlyMap<string, T> | Readonly<Record<string, T>>): Map<string, T> {
  const entries = m instanceof Map ? [...m.entries()] : Object.entries(m)
  entries.sort(([a], [b]) => compareBytes(a, b))
  return new Map(entries)
}

export function asBigInt(v: JsonValue | undefined, what: string): bigint {
  if (typeof v === 'bigint') return v
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v)
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v)
  throw new ValidationError(`malformed ${what}: expected an integer`)
}

/** Index just past the JSON value that starts at `i` (after any whitespace); the text must be valid JSON. */
function skipValue(text: string, i: number): number {
  i = skipSpace(text, i)
  const c = text[i]
  if (c === '"') {
    for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++
    return i + 1
  }
  if (c === '{' || c === '[') {
    let depth = 0
    for (; i < text.length; i++) {
      const ch = text[i]
      if (ch === '"') i = skipValue(text, i) - 1
      else if (ch === '{' || ch === '[') depth++
      else if (ch === '}' || ch === ']') {
        depth--
        if (depth === 0) return i + 1
      }
    }
    throw new ValidationError('malformed JSON: unterminated object or array')
  }
  const m = /^[^,\]}\s]+/.exec(text.slice(i, i + 64))
  if (!m) throw new ValidationError(`malformed JSON at offset ${i}`)
  return i + m[0].length
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++
  return i
}

/**
 * The members of a JSON object (`kind: 'object'`, key → value text) or the items of an array, each value as its
 * exact source text. Re-encoding parsed values would reorder integer-like keys (a block's
 * `sequenceNumberForAllocation`), so copies that must stay byte-exact work on the text.
 */
export function rawMembers(text: string): {key: string; text: string}[] {
  nativeParse(text) // validates, so the scanner below may assume well-formed input
  let i = skipSpace(text, 0)
  const open = text[i]
  if (open !== '{' && open !== '[') throw new ValidationError('malformed JSON: expected an object or an array')
  const out: {key: string; text: string}[] = []
  i = skipSpace(text, i + 1)
  let n = 0
  while (text[i] !== (open === '{' ? '}' : ']')) {
    let key = String(n++)
    if (open === '{') {
      const end = skipValue(text, i)
      key = JSON.parse(text.slice(i, end)) as string
      i = skipSpace(text, end) + 1 // the ':'
    }
    const start = skipSpace(text, i)
    const end = skipValue(text, start)
    out.push({key, text: text.slice(start, end)})
    i = skipSpace(text, end)
    if (text[i] === ',') i = skipSpace(text, i + 1)
  }
  return out
}

/** The JSON text without insignificant whitespace (Go's json.Compact). */
export function compactJson(text: string): string {
  // Stored values are mostly compact already: a native search says so without a walk.
  if (!JSON_SPACE.test(text)) return text
  // Runs of text between whitespace are copied whole.
  let out = ''
  let run = 0
  const n = text.length
  for (let i = 0; i < n; ) {
    const c = text.charCodeAt(i)
    if (c === 34) i = stringEnd(text, i)
    else if (c === 32 || c === 10 || c === 13 || c === 9) {
      if (run < i) out += text.slice(run, i)
      run = ++i
    } else i++
  }
  return run === 0 ? text : out + text.slice(run)
}

/** Whitespace JSON allows between tokens (and strings may hold): none means the text is compact. */
const JSON_SPACE = /[ \t\n\r]/

/** The index just after the JSON string that starts at `i` (its end, if it is unterminated). */
function stringEnd(text: string, i: number): number {
  for (;;) {
    // The next quote ends the string unless an odd run of backslashes escapes it.
    const q = text.indexOf('"', i + 1)
    if (q < 0) return text.length
    let b = q - 1
    while (text.charCodeAt(b) === 92) b--
    if ((q - 1 - b) % 2 === 0) return q + 1
    i = q
  }
}

/**
 * Compact JSON re-indented as Go's json.Indent (and so json.MarshalIndent) lays it out: one member per line,
 * `": "` after keys, and empty objects and arrays kept as `{}` and `[]`. As json.Indent's `prefix`, every line
 * after the first starts with `prefix` (for a value placed inside an indented document).
 */
export function indentJson(compact: string, indent = '  ', prefix = ''): string {
  // Runs of text between structural characters are copied whole.
  let out = ''
  let run = 0
  let depth = 0
  // One string per depth, made once: a block's entry has hundreds of lines.
  const lines: string[] = []
  const newline = () => (lines[depth] ??= `\n${prefix}${indent.repeat(depth)}`)
  const n = compact.length
  for (let i = 0; i < n; ) {
    const c = compact.charCodeAt(i)
    if (c === 34) {
      i = stringEnd(compact, i)
    } else if (c === 123 || c === 91) {
      if (compact.charCodeAt(i + 1) === (c === 123 ? 125 : 93)) {
        i += 2
        continue
      }
      depth++
      out += compact.slice(run, i + 1) + newline()
      run = ++i
    } else if (c === 125 || c === 93) {
      depth--
      out += compact.slice(run, i) + newline() + compact[i]
      run = ++i
    } else if (c === 44) {
      out += `${compact.slice(run, i)},${newline()}`
      run = ++i
    } else if (c === 58) {
      out += `${compact.slice(run, i)}: `
      run = ++i
    } else i++
  }
  return out + compact.slice(run)
}
