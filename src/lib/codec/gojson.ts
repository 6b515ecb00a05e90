// JSON as Go's encoding/json writes it, and a parser that keeps integers above 2^53 exact.
// Calico's block sequence numbers are uint64 nanosecond timestamps (~1.77e18): JSON.parse would round them,
// and a rounded sequence number makes every guarded release fail. Byte-for-byte output matters because
// Calico tooling reads what we write and our tests compare stored bytes.
import {ValidationError} from '../errors.js'

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | {[k: string]: JsonValue}

const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y

class Parser {
  pos = 0
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new ValidationError(`malformed JSON: ${what} at offset ${this.pos}`)
  }

  ws(): void {
    while (this.pos < this.text.length && ' \t\n\r'.includes(this.text[this.pos]!)) this.pos++
  }

  value(): JsonValue {
    this.ws()
    const c = this.text[this.pos]
    if (c === '{') return this.object()
    if (c === '[') return this.array()
    if (c === '"') return this.string()
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number()
    for (const [word, v] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length
        return v
      }
    }
    return this.fail(c === undefined ? 'unexpected end' : `unexpected character ${JSON.stringify(c)}`)
  }

  object(): JsonValue {
    const out: {[k: string]: JsonValue} = {}
    this.pos++
    this.ws()
    if (this.text[this.pos] === '}') {
      this.pos++
      return out
    }
    for (;;) {
      this.ws()
      if (this.text[this.pos] !== '"') this.fail('expected a string key')
      const k = this.string()
      this.ws()
      if (this.text[this.pos++] !== ':') this.fail('expected ":"')
      // Plain assignment of "__proto__" would replace the prototype instead of adding a member.
      Object.defineProperty(out, k, {value: this.value(), enumerable: true, writable: true, configurable: true})
      this.ws()
      const c = this.text[this.pos++]
      if (c === '}') return out
      if (c !== ',') this.fail('expected "," or "}"')
    }
  }

  array(): JsonValue {
    const out: JsonValue[] = []
    this.pos++
    this.ws()
    if (this.text[this.pos] === ']') {
      this.pos++
      return out
    }
    for (;;) {
      out.push(this.value())
      this.ws()
      const c = this.text[this.pos++]
      if (c === ']') return out
      if (c !== ',') this.fail('expected "," or "]"')
    }
  }

  // Sticky regexes match at `pos` without copying the rest of the text (slicing made parsing quadratic).
  private match(re: RegExp): RegExpExecArray | null {
    re.lastIndex = this.pos
    return re.exec(this.text)
  }

  string(): string {
    const m = this.match(STRING)
    if (!m) this.fail('bad string')
    this.pos += m[0].length
    // Most strings have no escapes; only those need JSON.parse.
    return m[0].includes('\\') ? (JSON.parse(m[0]) as string) : m[0].slice(1, -1)
  }

  number(): number | bigint {
    const m = this.match(NUMBER)
    if (!m) this.fail('bad number')
    this.pos += m[0].length
    if (m[1] === undefined && m[2] === undefined) {
      const n = Number(m[0])
      return Number.isSafeInteger(n) ? n : BigInt(m[0])
    }
    return Number(m[0])
  }
}

/** Parse JSON; integers outside the safe range come back as bigint. */
export function parseJson(text: string): JsonValue {
  const p = new Parser(text)
  const v = p.value()
  p.ws()
  if (p.pos !== text.length) p.fail('trailing data')
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
  // eslint-disable-next-line no-control-regex
  const body = s.replace(/["\\\u0000-\u001f<>&\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) => {
    const known = GO_ESCAPES[c]
    if (known) return known
    const code = c.charCodeAt(0)
    if (code >= 0xd800 && code <= 0xdfff) return '\ufffd'
    return `\\u${code.toString(16).padStart(4, '0')}`
  })
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
      const entries = v instanceof Map ? [...(v as Map<string, unknown>).entries()] : Object.entries(v as Record<string, unknown>)
      for (const [k, x] of entries) {
        if (x !== undefined) parts.push(`${goString(k)}:${encodeJson(x)}`)
      }
      return `{${parts.join(',')}}`
    }
    default:
      throw new TypeError(`cannot encode ${typeof v}`)
  }
}

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
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v)
  throw new ValidationError(`malformed ${what}: expected an integer`)
}
