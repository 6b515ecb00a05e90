// Unguarded bulk writes for seeding large stores (benchmarks and the tests that need their size).
import type {Store, WriteOp} from '../../src/lib/store/store.ts'

/**
 * Unguarded bulk writes: etcd allows 128 operations per transaction and 1.5 MiB per request, so batches stay
 * under both; a few transactions are kept in flight to make seeding etcd quick.
 */
export class BulkWriter {
  private ops: WriteOp[] = []
  private bytes = 0
  private inFlight: Promise<unknown>[] = []
  constructor(
    private readonly store: Store,
    private readonly maxOps = 120,
    private readonly maxBytes = 1_000_000,
    private readonly parallel = 4,
  ) {}

  async put(key: string, value: string): Promise<void> {
    this.ops.push({put: key, value})
    this.bytes += key.length + value.length
    if (this.ops.length >= this.maxOps || this.bytes >= this.maxBytes) await this.flush()
  }

  private async flush(): Promise<void> {
    if (this.ops.length === 0) return
    const ops = this.ops
    this.ops = []
    this.bytes = 0
    this.inFlight.push(this.store.txn([], ops))
    if (this.inFlight.length >= this.parallel) {
      await Promise.all(this.inFlight)
      this.inFlight = []
    }
  }

  async done(): Promise<void> {
    await this.flush()
    await Promise.all(this.inFlight)
    this.inFlight = []
  }
}
