// A forward-only reader of JSON text, for whole-store scans that need a few members of 100,000s of records
// (`ipam check` reads every WorkloadEndpoint and block): it walks the text, hands over the members it is asked for
// and steps over the rest without building them. It only reads text without a backslash (`JsonCursor.over`), so a
// string ends at the next quote and is its own value; Go writes a backslash only to escape something, and a record
// with one is left to the full decoder. Anything it does not expect throws NOT_LEAN: the caller then decodes the
// record in full, which also reports what is wrong with it.

/** Thrown (never outside a lean reader) when a record is not in the shape a lean reader takes on. */
export const NOT_LEAN: Error = new Error('record not read lean')

const QUOTE = 34
const COMMA = 44
const COLON = 58
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const MINUS = 45
const ZERO = 48
const NINE = 57

/**
 * `seen` with `bit` set, for a reader that marks each member it reads; NOT_LEAN when it was set already (a
 * repeated member: JSON.parse keeps the last, a lean reader leaves that to it).
 */
export function once(seen: number, bit: number): number {
  if (seen & bit) throw NOT_LEAN
  return seen | bit
}

/** A JSON number, anchored at lastIndex. */
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

export class JsonCursor {
  pos = 0
  private nameStart = 0
  private nameEnd = 0

  private constructor(readonly text: string) {}

  /** A cursor at the start of `text`, or undefined when the text has a backslash (see the file comment). */
  static over(text: string): JsonCursor | undefined {
    return text.indexOf('\\') < 0 ? new JsonCursor(text) : undefined
  }

  /** The next character that is not JSON whitespace (the cursor moves to it); -1 at the end. */
  peek(): number {
    const t = this.text
    for (let i = this.pos; i < t.length; i++) {
      const c = t.charCodeAt(i)
      if (c !== 32 && c !== 10 && c !== 13 && c !== 9) {
        this.pos = i
        return c
      }
    }
    this.pos = t.length
    return -1
  }

  private eat(c: number): void {
    if (this.peek() !== c) throw NOT_LEAN
    this.pos++
  }

  /** Only whitespace is left. */
  end(): void {
    if (this.peek() !== -1) throw NOT_LEAN
  }

  /** `{`: true when a member follows (read its name with `name`), false for `{}`. */
  openObject(): boolean {
    this.eat(OPEN_OBJECT)
    if (this.peek() !== CLOSE_OBJECT) return true
    this.pos++
    return false
  }

  /** `[`: true when an element follows, false for `[]`. */
  openArray(): boolean {
    this.eat(OPEN_ARRAY)
    if (this.peek() !== CLOSE_ARRAY) return true
    this.pos++
    return false
  }

  /** After a member: true when another follows, false at the closing brace. */
  nextMember(): boolean {
    return this.next(CLOSE_OBJECT)
  }

  /** After an element: true when another follows, false at the closing bracket. */
  nextElement(): boolean {
    return this.next(CLOSE_ARRAY)
  }

  private next(close: number): boolean {
    const c = this.peek()
    this.pos++
    if (c === COMMA) return true
    if (c === close) return false
    throw NOT_LEAN
  }

  /** A member name and its colon; compare it with `is`. */
  name(): void {
    if (this.peek() !== QUOTE) throw NOT_LEAN
    const end = this.text.indexOf('"', this.pos + 1)
    if (end < 0) throw NOT_LEAN
    this.nameStart = this.pos + 1
    this.nameEnd = end
    this.pos = end + 1
    this.eat(COLON)
  }

  /** Whether the member name read last is `name`. */
  is(name: string): boolean {
    return this.nameEnd - this.nameStart === name.length && this.text.startsWith(name, this.nameStart)
  }

  /** A string value. */
  string(): string {
    if (this.peek() !== QUOTE) throw NOT_LEAN
    const start = this.pos + 1
    const end = this.text.indexOf('"', start)
    if (end < 0) throw NOT_LEAN
    this.pos = end + 1
    return this.text.slice(start, end)
  }

  /** A string value, stepped over without building it. */
  skipString(): void {
    if (this.peek() !== QUOTE) throw NOT_LEAN
    const end = this.text.indexOf('"', this.pos + 1)
    if (end < 0) throw NOT_LEAN
    this.pos = end + 1
  }

  /** `null` (consumed: true) or not (false, nothing consumed). */
  null(): boolean {
    if (this.peek() !== 110 || !this.text.startsWith('null', this.pos)) return false
    this.pos += 4
    return true
  }

  /** A non-negative integer below 10^9 written without sign, fraction or exponent. */
  smallInt(): number {
    this.peek()
    const t = this.text
    const start = this.pos
    let i = start
    let n = 0
    for (; i < t.length; i++) {
      const c = t.charCodeAt(i)
      if (c < ZERO || c > NINE) break
      n = n * 10 + (c - ZERO)
    }
    const digits = i - start
    if (digits === 0 || digits > 9 || (digits > 1 && t.charCodeAt(start) === ZERO)) throw NOT_LEAN
    this.pos = i
    this.noNumberTail()
    return n
  }

  /** An integer of any length, optionally negative, without fraction or exponent (a sequence number). */
  skipInteger(): void {
    const t = this.text
    this.peek()
    let i = this.pos
    if (t.charCodeAt(i) === MINUS) i++
    const start = i
    while (i < t.length && t.charCodeAt(i) >= ZERO && t.charCodeAt(i) <= NINE) i++
    if (i === start || (i - start > 1 && t.charCodeAt(start) === ZERO)) throw NOT_LEAN
    this.pos = i
    this.noNumberTail()
  }

  /** An integer must not continue as a fraction or exponent. */
  private noNumberTail(): void {
    const c = this.text.charCodeAt(this.pos)
    if (c === 46 || c === 101 || c === 69) throw NOT_LEAN
  }

  /** Step over any value. */
  skip(): void {
    const c = this.peek()
    const t = this.text
    if (c === QUOTE) {
      this.skipString()
    } else if (c === OPEN_OBJECT) {
      if (this.openObject())
        do {
          this.name()
          this.skip()
        } while (this.nextMember())
    } else if (c === OPEN_ARRAY) {
      if (this.openArray())
        do this.skip()
        while (this.nextElement())
    } else if (c === 116 && t.startsWith('true', this.pos)) {
      this.pos += 4
    } else if (c === 102 && t.startsWith('false', this.pos)) {
      this.pos += 5
    } else if (!this.null()) {
      NUMBER.lastIndex = this.pos
      if (!NUMBER.test(t)) throw NOT_LEAN
      this.pos = NUMBER.lastIndex
    }
  }
}
