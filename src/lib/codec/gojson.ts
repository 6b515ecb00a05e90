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

function goString(s: string): string {
  // Go escapes <, > and & (HTML safety) and U+2028/2029; lone surrogates are invalid UTF-8 and become U+FFFD.
  const body = s.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    /["\\\u0000-\u001f<>&\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    (c) => {
      const known = GO_ESCAPES[c]
      if (known) return known
      const code = c.charCodeAt(0)
      if (code >= 0xd800 && code <= 0xdfff) return '\ufffd'
      return `\\u${code.toString(16).padStart(4, '0')}`
    },
  )
  return `"${body}"`
}

/** Already-encoded JSON to splice in verbatim (e.g. Go's `null` for a nil slice next to `[]`). */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * Encode like Go's json.Marshal: no whitespace, object keys in insertion order (callers build objects in
 * Go struct-field order), `undefined` members omitted (omitempty), bigint written as plain digits.
 */
export function encodeJson(v: unknown): string {
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
      return goString(v)
    case 'object': {
      if (v instanceof RawJson) return v.text
      if (Array.isArray(v)) return `[${v.map((x) => encodeJson(x ?? null)).join(',')}]`
      const parts: string[] = []
      // A Map keeps its own order; plain objects would put integer-like keys first in numeric order.
      const entries =
        v instanceof Map ? [...(v as Map<string, unknown>).entries()] : Object.entries(v as Record<string, unknown>)
      for (const [k, x] of entries) {
        if (x !== undefined) parts.push(`${goString(k)}:${encodeJson(x)}`)
      }
      return `{${parts.join(',')}}`
    }
    default:
      throw new TypeError(`cannot encode ${typeof v}`)
  }
}

/**
 * Go's json.MarshalIndent(v, "", indent): encodeJson's output with each member and element on its own line.
 * Empty objects and arrays stay `{}` and `[]`, as Go writes them. The CNI result and error JSON use four spaces.
 */
export function encodeJsonIndent(v: unknown, indent = '    ', depth = ''): string {
  if (v === null || typeof v !== 'object' || v instanceof RawJson) return encodeJson(v)
  const inner = depth + indent
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]'
    return `[\n${v.map((x) => inner + encodeJsonIndent(x ?? null, indent, inner)).join(',\n')}\n${depth}]`
  }
  const entries =
    v instanceof Map ? [...(v as Map<string, unknown>).entries()] : Object.entries(v as Record<string, unknown>)
  const parts: string[] = []
  for (const [k, x] of entries) {
    if (x !== undefined) parts.push(`${inner}${goString(k)}: ${encodeJsonIndent(x, indent, inner)}`)
  }
  return parts.length === 0 ? '{}' : `{\n${parts.join(',\n')}\n${depth}}`
}

/** Go's json.MarshalIndent(v, "", "    "), as the CNI Go library prints results and errors (no newline). */
export const goIndent = (value: unknown): string => encodeJsonIndent(value)

/** Go's json.NewEncoder(w).Encode(v): compact, newline-terminated (the CNI VERSION answer). */
export const goEncodeLine = (value: unknown): string => `${encodeJson(value)}\n`

/** Go's %q for a string (strconv.Quote), close enough for messages: a JSON string with Go's escapes. */
export const goQuote = (text: string): string => goString(text)

/** Go's %q for a []string: `["a" "b"]`. */
export const goQuoteList = (items: readonly string[]): string => `[${items.map(goQuote).join(' ')}]`

/** Order of UTF-8 bytes (Go map keys, etcd and SQLite keys), which differs from JS's UTF-16 order. */
export function compareBytes(a: string, b: string): number {
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
