// The `yaml` package, loaded on first use: loading it is ~20 ms of a CLI start, and most runs never read or write
// YAML (only config files, manifests and `-o yaml` do). createRequire keeps it out of the CLI bundle as well.
import {createRequire} from 'node:module'

type Yaml = typeof import('yaml')
let yaml: Yaml | undefined

export const loadYaml = (): Yaml => (yaml ??= createRequire(import.meta.url)('yaml') as Yaml)

/**
 * A string the `yaml` package writes as it is (plain) at any place in block style: letters, digits and `._/-`
 * (`:` too in values, never last nor before a space), starting with a letter or digit, and not read back as
 * another type by YAML 1.2's core schema (numbers, booleans, null). Anything else goes through the package.
 */
const PLAIN_VALUE = /^[A-Za-z0-9][A-Za-z0-9._/:-]*$/
const PLAIN_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/
const CORE_TYPED =
  /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+|null|Null|NULL|true|True|TRUE|false|False|FALSE|y|Y|n|N|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$/

/** Whether a string may be written plain (see PLAIN_VALUE); only a digit first or 1–5 characters can be typed. */
function plainString(v: string, key: boolean): boolean {
  if (!(key ? PLAIN_KEY : PLAIN_VALUE).test(v) || v.endsWith(':')) return false
  const c = v.charCodeAt(0)
  return !((v.length <= 5 || (c >= 48 && c <= 57)) && CORE_TYPED.test(v))
}

/** Keys repeat in every resource: each is tested once (up to a bound, for stores of unusual keys). */
const plainKeys = new Map<string, boolean>()

function plainScalar(v: unknown, key: boolean): string | undefined {
  if (typeof v === 'string') {
    if (key) {
      let ok = plainKeys.get(v)
      if (ok === undefined) {
        ok = plainString(v, true)
        if (plainKeys.size < 10_000) plainKeys.set(v, ok)
      }
      return ok ? v : undefined
    }
    return plainString(v, false) ? v : undefined
  }
  if (key) return undefined
  if (v === null) return 'null'
  if (v === true) return 'true'
  if (v === false) return 'false'
  if (typeof v === 'number' && Number.isSafeInteger(v) && !Object.is(v, -0)) return String(v)
  return undefined
}

type Plain = Record<string, unknown>
const isPlainObject = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Lines of a map at `indent`, the first one starting with `first` instead; false when a value is not simple. */
function mapLines(obj: Plain, indent: string, first: string, out: string[]): boolean {
  let lead = first
  let lines = 0
  for (const k in obj) {
    if (!Object.hasOwn(obj, k)) continue
    const key = plainScalar(k, true)
    if (key === undefined) return false
    const v = obj[k]
    if (Array.isArray(v)) {
      if (v.length === 0) out.push(`${lead}${key}: []\n`)
      else {
        out.push(`${lead}${key}:\n`)
        const inner = `${indent}  `
        for (const x of v) {
          if (isPlainObject(x)) {
            if (Object.keys(x).length === 0) out.push(`${inner}- {}\n`)
            else if (!mapLines(x, `${inner}  `, `${inner}- `, out)) return false
          } else {
            const s = plainScalar(x, false)
            if (s === undefined) return false
            out.push(`${inner}- ${s}\n`)
          }
        }
      }
    } else if (isPlainObject(v)) {
      if (Object.keys(v).length === 0) out.push(`${lead}${key}: {}\n`)
      else {
        out.push(`${lead}${key}:\n`)
        if (!mapLines(v, `${indent}  `, `${indent}  `, out)) return false
      }
    } else {
      const s = plainScalar(v, false)
      if (s === undefined) return false
      out.push(`${lead}${key}: ${s}\n`)
    }
    lead = indent
    lines++
  }
  return lines > 0
}

/**
 * One item of a YAML List's `items` (`  - …`, its lines indented by 4), exactly as the `yaml` package writes it
 * inside `{apiVersion, items, kind, metadata}` with `lineWidth: 0`: written directly when every key and value is
 * simple (the common resource), else by the package itself. Lets a List of 500,000 items be written one item at
 * a time (`datastore export`) rather than as one document held in memory.
 */
export function yamlListItem(item: unknown): string {
  if (isPlainObject(item)) {
    const out: string[] = []
    if (mapLines(item, '    ', '  - ', out)) return out.join('')
  }
  const head = 'apiVersion: v\nitems:\n'
  const tail = 'kind: L\nmetadata: {}\n'
  const text = loadYaml().stringify({apiVersion: 'v', items: [item], kind: 'L', metadata: {}}, {lineWidth: 0})
  if (!text.startsWith(head) || !text.endsWith(tail)) throw new Error(`internal: unexpected YAML layout ${text}`)
  return text.slice(head.length, text.length - tail.length)
}

/** Thrown inside yamlListItemOfJson when the text leaves the subset it writes itself. */
const OUTSIDE = new Error('outside the subset')
/** A JSON string's characters that need no decoding (no escape) and are allowed raw (no control character). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const ESCAPE_FREE = /^[^\\\u0000-\u001f]*$/

/**
 * yamlListItem of the object a JSON text holds, less the `drop.keys` members of its `drop.member` object (as
 * `datastore export` strips local metadata), written straight from the text: no object is built. Only for what
 * yamlListItem writes itself: objects whose keys are plain and do not start with a digit (which JSON.parse would
 * put first), no duplicate keys, arrays of scalars and objects, strings that are plain with no escape in the text,
 * integers of at most 15 digits (not -0), true, false, null, and no empty object at the top. Undefined for
 * anything else, including any text JSON.parse would refuse: the caller parses it and calls yamlListItem.
 */
export function yamlListItemOfJson(
  text: string,
  drop?: {readonly member: string; readonly keys: readonly string[]},
): string | undefined {
  const out: string[] = []
  return appendYamlListItemOfJson(text, drop, out) ? out.join('') : undefined
}

/**
 * yamlListItemOfJson's lines pushed onto `out`, so that many items are joined into one string at once (datastore
 * export joins a page of them: one join per page, not one per item); false, with `out` as it was, where
 * yamlListItemOfJson gives undefined.
 */
export function appendYamlListItemOfJson(text: string, drop: Drop | undefined, out: string[]): boolean {
  const shapes = shapesFor(drop)
  if (shapes.write(text, out)) return true
  const mark = out.length
  if (walk(new JsonToYaml(text, drop, out))) {
    shapes.learn(text)
    return true
  }
  out.length = mark
  return false
}

/** JsonToYaml over its whole text: whether the text is one it writes (its lines are then on its `out`). */
function walk(t: JsonToYaml): boolean {
  try {
    t.ws()
    if (t.text.charCodeAt(t.i) !== 123 || t.object('    ', '  - ', true, false) === 0) return false
    t.ws()
    return t.i === t.text.length
  } catch (err) {
    if (err !== OUTSIDE) throw err
    return false
  }
}

type Drop = {readonly member: string; readonly keys: readonly string[]}

/**
 * One shape of resource (its keys in order, the kinds and number of its values): a regular expression that
 * matches exactly the compact JSON texts of that shape whose values JsonToYaml writes plain, capturing the values,
 * and the YAML lines around them. A text it matches is written from the captures (the values' own characters,
 * as JsonToYaml writes them) without being walked character by character: stored resources of one kind
 * (500,000 WorkloadEndpoints) mostly share a few shapes.
 */
interface ItemShape {
  readonly re: RegExp
  /** The text between the values: one more than the values. */
  readonly parts: readonly string[]
  /** Per value: a string, which must also pass plainString's checks the expression cannot make. */
  readonly strings: readonly boolean[]
}

/** The capture of a JSON string JsonToYaml writes plain (PLAIN_VALUE's characters), of an integer, of a word. */
const STRING_VALUE = '"([A-Za-z0-9][A-Za-z0-9._/:-]*)"'
const INTEGER_VALUE = '(0|-?[1-9][0-9]{0,14})'
const WORD_VALUE = '(true|false|null)'
/** A dropped member's value: any string without an escape or a control character (JsonToYaml's ESCAPE_FREE). */
const DROPPED_VALUE = String.raw`"[^"\\\u0000-\u001f]*"`

/**
 * The shape JsonToYaml records while it walks a text (JsonToYaml.rec): the expression, built from the JSON it reads
 * (its punctuation and keys as they are, a capture where each value is), and the YAML it writes, cut at the values.
 * Any whitespace between the tokens makes it no shape: shapes are for compact texts.
 */
class ShapeRecorder {
  private re = '^'
  private readonly parts = ['']
  private readonly strings: boolean[] = []
  compact = true

  /** JSON read as it is. */
  json(s: string): void {
    this.re += s.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')
  }

  /** JSON read that the shape accepts in any form the expression `src` matches (a dropped member's value). */
  any(src: string): void {
    this.re += src
  }

  /** YAML written as it is. */
  yaml(s: string): void {
    this.parts[this.parts.length - 1] += s
  }

  /** The YAML just written ended with `was`, which is `now` instead. */
  yamlTail(was: string, now: string): void {
    const last = this.parts.length - 1
    this.parts[last] = `${this.parts[last]!.slice(0, -was.length)}${now}`
  }

  /** A value, read as `src` captures it and written as read. */
  value(src: string, isString: boolean): void {
    this.re += src
    this.strings.push(isString)
    this.parts.push('')
  }

  shape(): ItemShape | undefined {
    return this.compact ? {re: new RegExp(`${this.re}$`), parts: this.parts, strings: this.strings} : undefined
  }
}

/** Shapes tried first, most recently used first. */
const MAX_SHAPES = 4
/** Shapes learnt at most per drop: texts of ever new shapes (labels that differ per pod) stop being learnt. */
const MAX_LEARNT = 32

/** The shapes met so far for one `drop`, and how many were learnt. */
class ItemShapes {
  private shapes: ItemShape[] = []
  learnt = 0
  /** Texts written from a shape (what the tests check was taken). */
  written = 0
  constructor(private readonly drop: Drop | undefined) {}

  /** Writes `text` onto `out` if one of the shapes matches it and its values pass plainString. */
  write(text: string, out: string[]): boolean {
    const shapes = this.shapes
    for (let s = 0; s < shapes.length; s++) {
      const shape = shapes[s]!
      const m = shape.re.exec(text)
      if (m === null) continue
      const {parts, strings} = shape
      for (let i = 0; i < strings.length; i++) {
        if (!strings[i]) continue
        const v = m[i + 1]!
        const c = v.charCodeAt(0)
        if (v.endsWith(':') || ((v.length <= 5 || (c >= 48 && c <= 57)) && CORE_TYPED.test(v))) return false
      }
      out.push(parts[0]!)
      for (let i = 0; i < strings.length; i++) out.push(m[i + 1]!, parts[i + 1]!)
      this.written++
      if (s > 0) {
        shapes.splice(s, 1)
        shapes.unshift(shape)
      }
      return true
    }
    return false
  }

  /** A text JsonToYaml wrote that no shape matched: its shape is tried first from now on (within MAX_LEARNT). */
  learn(text: string): void {
    if (this.learnt >= MAX_LEARNT) return
    this.learnt++
    const rec = new ShapeRecorder()
    if (!walk(new JsonToYaml(text, this.drop, [], rec))) return
    const shape = rec.shape()
    if (shape === undefined) return
    this.shapes.unshift(shape)
    if (this.shapes.length > MAX_SHAPES) this.shapes.pop()
  }
}

/** How many shapes were learnt for `drop` and how many texts were written from them (for tests). */
export function itemShapeCounts(drop: Drop | undefined): {learnt: number; written: number} {
  const {learnt, written} = shapesFor(drop)
  return {learnt, written}
}

const shapesByDrop = new WeakMap<Drop, ItemShapes>()
const undroppedShapes = new ItemShapes(undefined)
const shapesFor = (drop: Drop | undefined): ItemShapes => {
  if (drop === undefined) return undroppedShapes
  let shapes = shapesByDrop.get(drop)
  if (shapes === undefined) {
    shapes = new ItemShapes(drop)
    shapesByDrop.set(drop, shapes)
  }
  return shapes
}

/** yamlListItemOfJson's reader: a position in the text, and the lines written (onto `out`). */
class JsonToYaml {
  i = 0
  constructor(
    readonly text: string,
    private readonly drop: Drop | undefined,
    readonly out: string[],
    /** Records the text's shape as it is walked (ItemShapes.learn); absent on the usual walk. */
    private readonly rec?: ShapeRecorder,
  ) {}

  ws(): void {
    const from = this.i
    for (;;) {
      const c = this.text.charCodeAt(this.i)
      if (c === 32 || c === 10 || c === 13 || c === 9) this.i++
      else break
    }
    if (this.rec && this.i > from) this.rec.compact = false
  }

  /** A line (or the start of one) written as it is. */
  private line(s: string): void {
    this.out.push(s)
    this.rec?.yaml(s)
  }

  /**
   * The characters of a string at its opening quote, up to the next quote: callers accept only strings whose
   * characters are plain (so no escape, and that quote ends the string) or check them (dropped members).
   */
  rawString(): string {
    const start = this.i + 1
    const end = this.text.indexOf('"', start)
    if (end < 0) throw OUTSIDE
    this.i = end + 1
    return this.text.slice(start, end)
  }

  scalar(): string {
    const text = this.text
    const c = text.charCodeAt(this.i)
    if (c === 34) {
      const s = this.rawString()
      if (!plainString(s, false)) throw OUTSIDE
      this.rec?.value(STRING_VALUE, true)
      return s
    }
    const word = c === 116 ? 'true' : c === 102 ? 'false' : c === 110 ? 'null' : undefined
    if (word !== undefined) {
      if (!text.startsWith(word, this.i)) throw OUTSIDE
      this.i += word.length
      this.rec?.value(WORD_VALUE, false)
      return word
    }
    const start = this.i
    let i = start
    if (c === 45) i++
    const digits = i
    for (;;) {
      const d = text.charCodeAt(i)
      if (d >= 48 && d <= 57) i++
      else break
    }
    const len = i - digits
    const lead0 = text.charCodeAt(digits) === 48
    // A fraction or an exponent after the digits is refused by the caller, which wants a separator there.
    if (len === 0 || len > 15 || (lead0 && (len > 1 || c === 45))) throw OUTSIDE
    this.i = i
    this.rec?.value(INTEGER_VALUE, false)
    return text.slice(start, i)
  }

  /** The members of the object at `{`, as mapLines writes them; how many were written. */
  object(indent: string, first: string, top: boolean, dropping: boolean): number {
    const text = this.text
    const rec = this.rec
    this.i++
    rec?.json('{')
    this.ws()
    if (text.charCodeAt(this.i) === 125) {
      this.i++
      rec?.json('}')
      return 0
    }
    let lead = first
    let lines = 0
    const seen: string[] = []
    for (;;) {
      if (text.charCodeAt(this.i) !== 34) throw OUTSIDE
      // Checked below (plain, or an escape-free dropped one) before it is used.
      const k = this.rawString()
      if (seen.includes(k)) throw OUTSIDE
      seen.push(k)
      this.ws()
      if (text.charCodeAt(this.i) !== 58) throw OUTSIDE
      this.i++
      rec?.json(`"${k}":`)
      this.ws()
      const c = text.charCodeAt(this.i)
      if (dropping && this.drop!.keys.includes(k)) {
        // A dropped member is only checked: a string without escapes is all it ever holds in a stored resource.
        if (c !== 34 || !ESCAPE_FREE.test(this.rawString())) throw OUTSIDE
        rec?.any(DROPPED_VALUE)
      } else {
        const k0 = k.charCodeAt(0)
        if ((k0 >= 48 && k0 <= 57) || plainScalar(k, true) === undefined) throw OUTSIDE
        if (c === 91) this.array(indent, lead, k)
        else if (c === 123) {
          const mark = this.out.length
          const head = `${lead}${k}:\n`
          this.line(head)
          const dropHere = top && this.drop !== undefined && k === this.drop.member
          if (this.object(`${indent}  `, `${indent}  `, false, dropHere) === 0) {
            // Nothing written inside (empty, or every member dropped), so the head is still the last thing written.
            this.out.splice(mark, this.out.length - mark, `${lead}${k}: {}\n`)
            rec?.yamlTail(head, `${lead}${k}: {}\n`)
          }
        } else if (rec) {
          rec.yaml(`${lead}${k}: `)
          this.out.push(`${lead}${k}: ${this.scalar()}\n`)
          rec.yaml('\n')
        } else this.out.push(`${lead}${k}: ${this.scalar()}\n`)
        lead = indent
        lines++
      }
      this.ws()
      const sep = text.charCodeAt(this.i++)
      if (sep === 125) {
        rec?.json('}')
        return lines
      }
      if (sep !== 44) throw OUTSIDE
      rec?.json(',')
      this.ws()
    }
  }

  /** The array at `[`, the value of `key`, as mapLines writes it. */
  array(indent: string, lead: string, key: string): void {
    const text = this.text
    const rec = this.rec
    this.i++
    rec?.json('[')
    this.ws()
    if (text.charCodeAt(this.i) === 93) {
      this.i++
      rec?.json(']')
      this.line(`${lead}${key}: []\n`)
      return
    }
    this.line(`${lead}${key}:\n`)
    const inner = `${indent}  `
    for (;;) {
      const e = text.charCodeAt(this.i)
      if (e === 123) {
        if (this.object(`${inner}  `, `${inner}- `, false, false) === 0) this.line(`${inner}- {}\n`)
      } else if (e === 91) throw OUTSIDE
      else if (rec) {
        rec.yaml(`${inner}- `)
        this.out.push(`${inner}- ${this.scalar()}\n`)
        rec.yaml('\n')
      } else this.out.push(`${inner}- ${this.scalar()}\n`)
      this.ws()
      const sep = text.charCodeAt(this.i++)
      if (sep === 93) {
        rec?.json(']')
        return
      }
      if (sep !== 44) throw OUTSIDE
      rec?.json(',')
      this.ws()
    }
  }
}

const SIMPLE_LINE = /^( *)([^ :]+):(?: (.*))?$/
/**
 * Reading also takes `,` inside a plain value (a list of etcd endpoints) and `/` first (a path), which the writer
 * leaves to the package; never a space, so never `: ` or ` #`.
 */
const READ_PLAIN = /^[A-Za-z0-9/][A-Za-z0-9._/:,-]*$/

/**
 * A document that is only block maps of plain strings (`key: value`, nested maps indented deeper, `{}` for an
 * empty one), the subset yamlListItem writes and the shape of a typical config file: read without loading the
 * `yaml` package, whose loading is ~30 ms of a command's start. Undefined for anything else (comments, quotes,
 * lists, numbers, booleans, anchors, markers, tabs, CRs, duplicate keys, …): the caller parses it with the package.
 */
export function parseSimpleYaml(text: string): Record<string, unknown> | undefined {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  if (lines.length === 0) return undefined
  const root: Record<string, unknown> = {}
  /** Open maps, innermost last, with the indent of their keys. */
  const open: {indent: number; map: Record<string, unknown>}[] = [{indent: 0, map: root}]
  /** The map whose key ended with `:` and nothing after it: the next line, indented deeper, opens it. */
  let pending: {indent: number; map: Record<string, unknown>} | undefined
  for (const line of lines) {
    const m = SIMPLE_LINE.exec(line)
    if (!m) return undefined
    const indent = m[1]!.length
    const key = m[2]!
    const value = m[3]
    if (pending) {
      if (indent <= open.at(-1)!.indent) return undefined
      open.push({indent, map: pending.map})
      pending = undefined
    }
    while (open.length > 1 && indent < open.at(-1)!.indent) open.pop()
    const level = open.at(-1)!
    if (indent !== level.indent || !plainString(key, true) || Object.hasOwn(level.map, key)) return undefined
    if (value === undefined) {
      const map: Record<string, unknown> = {}
      level.map[key] = map
      pending = {indent, map}
    } else if (value === '{}') level.map[key] = {}
    else if (READ_PLAIN.test(value) && !value.endsWith(':') && !CORE_TYPED.test(value)) level.map[key] = value
    else return undefined
  }
  // A key with nothing after it and nothing under it is null in YAML, not a map.
  return pending ? undefined : root
}
