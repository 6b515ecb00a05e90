// The handle names `ipam check` finds in blocks, matched against the handle keys: 550,000 of each on a full-size
// cluster. A Set of strings cost about 0.6 s there (each name hashed by V8, a chained table rebuilt as it grows,
// and every key sliced to its name first). Here each name's hash is computed once, four characters at a time, and
// kept beside it in a typed array, so a probe compares numbers and reads a name only when the hashes agree; a key
// is looked up from an offset, without slicing out its name. A name need not be a string of its own either: it
// can be a stretch of a longer text (`addFrom`: the block's text, which check keeps anyway), so that 550,000 name
// strings are neither built nor kept alive through the scan, where each would be copied by every young-generation
// collection it survives.
import {grown} from './address-table.js'

const EMPTY = 0

/**
 * A hash of `s` from `from` to `end`. Collisions are expected and harmless (NameSet compares the text); the
 * final mix spreads every bit, so that consecutive names (`pod-1`, `pod-2`) do not cluster in the table.
 */
export function nameHash(s: string, from = 0, end = s.length): number {
  let h = Math.imul(end - from, 0x9e3779b1)
  let i = from
  for (; i + 4 <= end; i += 4) {
    // Four UTF-16 units folded into one word: units above 0xff overlap their neighbours, which only costs spread.
    const w = s.charCodeAt(i) ^ (s.charCodeAt(i + 1) << 8) ^ (s.charCodeAt(i + 2) << 16) ^ (s.charCodeAt(i + 3) << 24)
    h = Math.imul(h ^ w, 0x01000193)
    h ^= h >>> 15
  }
  for (; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) | 0
}

/** A set of names, each of which can be matched once by a text that ends with it (`matchTail`). */
export class NameSet {
  /** The texts the names are read from: a name added as a string, or a text given to `text` for `addFrom`. */
  private readonly texts: string[] = []
  private count = 0
  /** Per name: its text (index in `texts`), where it starts there, its length, its hash, whether matched. */
  private textOf = new Int32Array(1024)
  private starts = new Int32Array(1024)
  private lengths = new Int32Array(1024)
  private hashes = new Int32Array(1024)
  private matched = new Uint8Array(1024)
  /** Slots: entry + 1, EMPTY when free. Kept at most half full. */
  private slots = new Int32Array(2048)

  get size(): number {
    return this.count
  }

  add(name: string): void {
    this.insert(name, -1, 0, name.length)
  }

  /** A text for `addFrom` to take names from; its number. */
  text(t: string): number {
    this.texts.push(t)
    return this.texts.length - 1
  }

  /** Add the name that is text `ref` (from `text`) from `start` to `end`. */
  addFrom(ref: number, start: number, end: number): void {
    this.insert(this.texts[ref]!, ref, start, end)
  }

  /** Add `text` from `start` to `end`, `text` being text `ref`, or (-1) a name that becomes a text of its own. */
  private insert(text: string, ref: number, start: number, end: number): void {
    const h = nameHash(text, start, end)
    const length = end - start
    const mask = this.slots.length - 1
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = this.slots[i]!
      if (e === EMPTY) break
      if (this.hashes[e - 1] === h && this.is(e - 1, text, start, length)) return
    }
    const n = this.count++
    if (n === this.hashes.length) {
      this.textOf = grown(this.textOf, new Int32Array(n * 2))
      this.starts = grown(this.starts, new Int32Array(n * 2))
      this.lengths = grown(this.lengths, new Int32Array(n * 2))
      this.hashes = grown(this.hashes, new Int32Array(n * 2))
      this.matched = grown(this.matched, new Uint8Array(n * 2))
    }
    this.textOf[n] = ref < 0 ? this.text(text) : ref
    this.starts[n] = start
    this.lengths[n] = length
    this.hashes[n] = h
    if (this.count * 2 > this.slots.length) this.rehash(this.slots.length * 2)
    else this.place(n)
  }

  /** Whether name `e` is `text` from `from` for `length` units. */
  private is(e: number, text: string, from: number, length: number): boolean {
    if (this.lengths[e] !== length) return false
    const name = this.texts[this.textOf[e]!]!
    const start = this.starts[e]!
    for (let j = 0; j < length; j++) if (name.charCodeAt(start + j) !== text.charCodeAt(from + j)) return false
    return true
  }

  /**
   * Whether `text` from `from` on is a name of the set not matched before; it is matched now. `Set.delete` of the
   * sliced name, without the slice.
   */
  matchTail(text: string, from: number): boolean {
    const h = nameHash(text, from)
    const length = text.length - from
    const mask = this.slots.length - 1
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = this.slots[i]!
      if (e === EMPTY) return false
      if (this.hashes[e - 1] !== h || !this.is(e - 1, text, from, length)) continue
      if (this.matched[e - 1]) return false
      this.matched[e - 1] = 1
      return true
    }
  }

  /** The names never matched, in the order they were added. */
  unmatched(): string[] {
    const names: string[] = []
    for (let e = 0; e < this.count; e++)
      if (!this.matched[e])
        names.push(this.texts[this.textOf[e]!]!.slice(this.starts[e], this.starts[e]! + this.lengths[e]!))
    return names
  }

  private place(e: number): void {
    const mask = this.slots.length - 1
    let i = this.hashes[e]! & mask
    while (this.slots[i] !== EMPTY) i = (i + 1) & mask
    this.slots[i] = e + 1
  }

  private rehash(size: number): void {
    this.slots = new Int32Array(size)
    for (let e = 0; e < this.count; e++) this.place(e)
  }
}
