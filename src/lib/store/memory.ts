// In-process store with the same semantics as the persistent ones: for fast unit tests of the core.
import {compareBytes} from '../codec/gojson.js'
import type {Condition, KeyValue, ReadRequest, ReadResult, Store, TxnResult, WriteOp} from './store.js'

export class MemoryStore implements Store {
  readonly description = 'memory'
  private readonly data = new Map<string, KeyValue>()
  private rev = 0n

  async get(key: string): Promise<KeyValue | undefined> {
    return this.data.get(key)
  }

  async list(prefix: string): Promise<KeyValue[]> {
    return [...this.data.values()].filter((kv) => kv.key.startsWith(prefix)).sort((a, b) => compareBytes(a.key, b.key))
  }

  async listKeys(prefix: string): Promise<string[]> {
    return (await this.list(prefix)).map((kv) => kv.key)
  }

  async read(req: ReadRequest): Promise<ReadResult> {
    return {
      gets: (req.gets ?? []).map((k) => this.data.get(k)),
      lists: await Promise.all((req.lists ?? []).map((p) => this.list(p))),
    }
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    for (const c of conditions) {
      let ok: boolean
      if ('prefix' in c)
        ok = [...this.data.values()].every((kv) => !kv.key.startsWith(c.prefix) || kv.modRevision <= c.notAfter)
      else {
        const seen = this.data.get(c.key)
        ok = 'absent' in c ? seen === undefined : seen?.modRevision === c.modRevision
      }
      if (!ok) return {succeeded: false, revision: this.rev}
    }
    if (ops.length === 0) return {succeeded: true, revision: this.rev}
    this.rev++
    for (const op of ops) {
      if ('put' in op) this.data.set(op.put, {key: op.put, value: op.value, modRevision: this.rev})
      else this.data.delete(op.delete)
    }
    return {succeeded: true, revision: this.rev}
  }

  async revision(): Promise<bigint> {
    return this.rev
  }

  async close(): Promise<void> {}
}
