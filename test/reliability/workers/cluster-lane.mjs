// One long-lived allocator for test/reliability/etcd-cluster.integration.test.ts: assigns <count> addresses under
// a new handle, and releases its oldest handle whenever it holds more than two, in a loop, through the compiled
// library (dist/) on one etcd store opened with every endpoint. A failed operation is recorded and the loop goes
// on, as a retrying caller would.
//
// argv: <endpoints a,b,c> <host> <handle prefix> <count> <timeout ms>
// Writes one JSON line per operation to stdout: {op, handle, start, end, ok, error?, errorName?, ips?}; stops after
// the operation in flight when its stdin closes.
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'lib')
/** @type {typeof import('../../../src/lib/ipam/autoassign.ts')} */
const {autoAssign} = await import(path.join(DIST, 'ipam', 'autoassign.js'))
/** @type {typeof import('../../../src/lib/ipam/release.ts')} */
const {releaseByHandle} = await import(path.join(DIST, 'ipam', 'release.js'))
/** @type {typeof import('../../../src/lib/ipam/context.ts')} */
const {makeCtx} = await import(path.join(DIST, 'ipam', 'context.js'))
/** @type {typeof import('../../../src/lib/store/open.ts')} */
const {openStore} = await import(path.join(DIST, 'store', 'open.js'))

const [endpoints, host, prefix, countText, timeoutText] = process.argv.slice(2)
if (!endpoints || !host || !prefix) throw new Error('usage: cluster-lane.mjs <endpoints> <host> <prefix> <count> <ms>')
const count = Number(countText)
const store = await openStore(
  {
    type: 'etcdv3',
    path: '',
    etcdEndpoints: endpoints.split(','),
    timeoutMs: Number(timeoutText),
    sources: {},
  },
  {mode: 'create'},
)
const ctx = makeCtx(store)
let stop = false
process.stdin.on('end', () => {
  stop = true
})
process.stdin.resume()

/** @type {string[]} */
const held = []
/** @param {object} o */
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`)
for (let i = 0; !stop; i++) {
  /** @type {boolean} */
  const release = held.length > 2 && i % 2 === 1
  /** @type {string} */
  const handle = release ? /** @type {string} */ (held.shift()) : `${prefix}-${i}`
  const start = Date.now()
  try {
    if (release) {
      await releaseByHandle(ctx, handle)
      emit({op: 'release', handle, start, end: Date.now(), ok: true})
    } else {
      const r = await autoAssign(ctx, {host, num4: count, num6: 0, handle})
      const ips = r.v4.ips.map((a) => a.address.split('/')[0])
      if (ips.length === count) held.push(handle)
      emit({op: 'assign', handle, start, end: Date.now(), ok: ips.length === count, ips})
    }
  } catch (e) {
    const err = /** @type {Error} */ (e)
    emit({
      op: release ? 'release' : 'assign',
      handle,
      start,
      end: Date.now(),
      ok: false,
      errorName: err.name,
      error: err.message,
    })
  }
}
await store.close()
