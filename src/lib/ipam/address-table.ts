// The addresses that records name, for `ipam check`: each address once, in the order it was first named, with its
// owners and two flags. A whole-store scan names 550,000 of them, so IPv4 addresses (numbers) live in an
// open-addressing table of typed arrays, with no object per address; IPv6 addresses (their normalized text) go
// through a Map.

/** An address as check keys it: IPv4 as its 32-bit number, IPv6 as its normalized text. */
export type AddressKey = number | string

const V6 = 1
const POOLED = 2
const ALLOCATED = 4

/** Dotted quad of an IPv4 address held as a number. */
export const v4Text = (n: number): string => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`

export const keyText = (k: AddressKey): string => (typeof k === 'number' ? v4Text(k) : k)

/**
 * An owner: its text, or a number the table's `ownerText` turns into its text when asked (check's workload owners,
 * whose 550,000 texts would otherwise be built and kept while nearly none is ever read).
 */
export type Owner = string | number

/** An AddressTable's contents as plain data, which postMessage can copy (`AddressTable.contents`). */
export interface AddressTableContents {
  count: number
  v4: Uint32Array<ArrayBuffer>
  flags: Uint8Array<ArrayBuffer>
  ownerRefs: Int32Array<ArrayBuffer>
  otherOwners: Map<number, Owner[]>
  slots: Int32Array<ArrayBuffer>
  v6: Map<string, number>
  v6Text: string[]
}

export class AddressTable {
  private count = 0
  /** Per entry: the IPv4 address (0 for IPv6 entries) and flags. */
  private v4 = new Uint32Array(1024)
  private flags = new Uint8Array(1024)
  /**
   * Per entry, its owner when that is one number (nearly every address: one workload), else -1 and the owners in
   * `otherOwners`. A typed array, so that 550,000 owners cost no object each, nor a copy when sent to another thread.
   */
  private ownerRefs = new Int32Array(1024)
  private otherOwners = new Map<number, Owner[]>()
  /** IPv4 slots: entry + 1, 0 when free. Kept at most half full. */
  private slots = new Int32Array(2048)
  private v6 = new Map<string, number>()
  private v6Text: string[] = []

  constructor(private readonly ownerText: (ref: number) => string = String) {}

  /**
   * The table as plain data, for another thread (its typed arrays' buffers can be transferred): the table itself
   * must not be used afterwards.
   */
  contents(): AddressTableContents {
    const {count, v4, flags, ownerRefs, otherOwners, slots, v6, v6Text} = this
    return {count, v4, flags, ownerRefs, otherOwners, slots, v6, v6Text}
  }

  /** The table whose `contents()` these are, with its owner numbers turned into text by `ownerText`. */
  static from(c: AddressTableContents, ownerText: (ref: number) => string = String): AddressTable {
    return Object.assign(new AddressTable(ownerText), c)
  }

  get size(): number {
    return this.count
  }

  /** The entry of `key`, or -1. Entries are numbered 0…size-1 in the order first added. */
  find(key: AddressKey): number {
    if (typeof key === 'string') return this.v6.get(key) ?? -1
    const mask = this.slots.length - 1
    for (let i = slotOf(key, mask); ; i = (i + 1) & mask) {
      const e = this.slots[i]!
      if (e === 0) return -1
      if (this.v4[e - 1] === key) return e - 1
    }
  }

  /** `owner` names `key`. Whether the address is in an active pool is recorded with its first owner. */
  add(key: AddressKey, owner: Owner, pooled: boolean): void {
    const e = this.find(key)
    if (e >= 0) {
      const ref = this.ownerRefs[e]!
      if (ref < 0) this.otherOwners.get(e)!.push(owner)
      else {
        this.otherOwners.set(e, [ref, owner])
        this.ownerRefs[e] = -1
      }
      return
    }
    const n = this.count
    if (n === this.flags.length) {
      this.v4 = grown(this.v4, new Uint32Array(n * 2))
      this.flags = grown(this.flags, new Uint8Array(n * 2))
      this.ownerRefs = grown(this.ownerRefs, new Int32Array(n * 2))
    }
    if (typeof owner === 'number' && owner >= 0 && owner <= 0x7fffffff) this.ownerRefs[n] = owner
    else {
      this.ownerRefs[n] = -1
      this.otherOwners.set(n, [owner])
    }
    this.count++
    if (typeof key === 'string') {
      this.flags[n] = V6 | (pooled ? POOLED : 0)
      this.v6.set(key, n)
      this.v6Text[n] = key
      return
    }
    this.flags[n] = pooled ? POOLED : 0
    this.v4[n] = key
    if (this.count * 2 > this.slots.length) this.rehash(this.slots.length * 2)
    else this.place(n)
  }

  private place(e: number): void {
    const mask = this.slots.length - 1
    let i = slotOf(this.v4[e]!, mask)
    while (this.slots[i] !== 0) i = (i + 1) & mask
    this.slots[i] = e + 1
  }

  private rehash(size: number): void {
    this.slots = new Int32Array(size)
    for (let e = 0; e < this.count; e++) if (!(this.flags[e]! & V6)) this.place(e)
  }

  /** The address of entry `e` as text. */
  ip(e: number): string {
    return this.flags[e]! & V6 ? this.v6Text[e]! : v4Text(this.v4[e]!)
  }

  /** The owners of entry `e`, in the order found (a new array). */
  ownersOf(e: number): string[] {
    const ref = this.ownerRefs[e]!
    return ref >= 0 ? [this.ownerText(ref)] : this.otherOwners.get(e)!.map((x) => this.text(x))
  }

  ownerCount(e: number): number {
    const ref = this.ownerRefs[e]!
    return ref >= 0 ? 1 : this.otherOwners.get(e)!.length
  }

  private text(o: Owner): string {
    return typeof o === 'string' ? o : this.ownerText(o)
  }

  pooled(e: number): boolean {
    return (this.flags[e]! & POOLED) !== 0
  }

  /** A live (not cooling-down) allocation holds the address of entry `e`. */
  markAllocated(e: number): void {
    this.flags[e]! |= ALLOCATED
  }

  allocated(e: number): boolean {
    return (this.flags[e]! & ALLOCATED) !== 0
  }
}

/** An integer mix (every bit of the address moves every bit of the slot), so no run of addresses clusters. */
function slotOf(n: number, mask: number): number {
  let h = Math.imul(n ^ (n >>> 16), 0x45d9f3b)
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b)
  return (h ^ (h >>> 16)) & mask
}

/** `to` with `from` copied to its start: a typed array grown (check's tables double theirs when full). */
export function grown<T extends Uint32Array | Int32Array | Uint8Array>(from: T, to: T): T {
  to.set(from)
  return to
}
