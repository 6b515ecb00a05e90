// The handle names `ipam check` finds in blocks, matched against the handle keys: 550,000 of each on a full-size
// cluster. A Set of strings cost about 0.6 s there (each name hashed by V8, a chained table rebuilt as it grows,
// and every key sliced to its name first). Here each name's hash is computed once, four characters at a time, and
// kept beside it in a typed array, so a probe compares numbers and reads a name only when the hashes agree; a key
// is looked up from an offset, without slicing out its name.
import {grown} from './address-table.js'

const EMPTY = 0

/**
 * A hash of `s` from `from` to its end. Collisions are expected and harmless (NameSet compares the text); the
 * final mix spreads every bit, so that consecutive names (`pod-1`, `pod-2`) do not cluster in the table.
 */
export function nameHash(s: string, from = 0): number {
  const end = s.length
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
  private readonly names: string[] = []
  private hashes = new Int32Array(1024)
  private matched = new Uint8Array(1024)
  /** Slots: entry + 1, EMPTY when free. Kept at most half full. */
  private slots = new Int32Array(2048)

  get size(): number {
    return this.names.length
  }

  add(name: string): void {
    const h = nameHash(name)
    const mask = this.slots.length - 1
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = this.slots[i]!
      if (e === EMPTY) break
      if (this.hashes[e - 1] === h && this.names[e - 1] === name) return
    }
    const n = this.names.length
    if (n === this.hashes.length) {
      this.hashes = grown(this.hashes, new Int32Array(n * 2))
      this.matched = grown(this.matched, new Uint8Array(n * 2))
    }
    this.names.push(name)
    this.hashes[n] = h
    if (this.names.length * 2 > this.slots.length) this.rehash(this.slots.length * 2)
    else this.place(n)
  }

  /**
   * Whether `text` from `from` on is a name of the set not matched before; it is matched now. `Set.delete` of the
   * sliced name, without the slice.
   */
  matchTail(text: string, from: number): boolean {
    const h = nameHash(text, from)
    const len = text.length - from
    const mask = this.slots.length - 1
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = this.slots[i]!
      if (e === EMPTY) return false
      if (this.hashes[e - 1] !== h) continue
      const name = this.names[e - 1]!
      if (name.length !== len || !text.startsWith(name, from)) continue
      if (this.matched[e - 1]) return false
      this.matched[e - 1] = 1
      return true
    }
  }

  /** The names never matched, in the order they were added. */
  unmatched(): string[] {
    return this.names.filter((_, e) => !this.matched[e])
  }

  private place(e: number): void {
    const mask = this.slots.length - 1
    let i = this.hashes[e]! & mask
    while (this.slots[i] !== EMPTY) i = (i + 1) & mask
    this.slots[i] = e + 1
  }

  private rehash(size: number): void {
    this.slots = new Int32Array(size)
    for (let e = 0; e < this.names.length; e++) this.place(e)
  }
}
