// One process of the "8 concurrent processes" benchmark, driven over stdin/stdout so that only steady-state
// work is timed: it starts, connects, warms up, prints `ready`, and runs a round of `ops` operations only
// when the parent writes `go` (to every worker at once), then prints `done <ms>`.
//
// argv: <mode> <store> <id> <ops> <rounds>
//   mode  alloc: AutoAssign one address per op (with a handle, as the CNI plugin does) for host `w<id>-r<round>`;
//               the warm-up allocation claims that host's /26 block, so a round of up to 63 ops is pure
//               allocation from an existing affine block.
//         cas:   the raw datastore primitive an allocation is built on: get one ~1 KB key of its own, then a
//               Txn guarded on its mod revision that rewrites it.
//   store an embedded store file, or etcd:<endpoint>[,<endpoint>…]
import readline from 'node:readline'
import {autoAssign} from '../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../src/lib/ipam/context.ts'
import {openStore} from '../src/lib/store/open.ts'

const [mode, spec, id, opsText, roundsText] = process.argv.slice(2)
const ops = Number(opsText)
const rounds = Number(roundsText)
const etcd = spec!.startsWith('etcd:') ? spec!.slice(5) : undefined
const store = await openStore(
  {
    type: etcd ? 'etcdv3' : 'embedded',
    path: spec!,
    etcdEndpoints: etcd ? etcd.split(',') : [],
    timeoutMs: 30_000,
    sources: {},
  },
  {mode: 'create'},
)
const ctx = makeCtx(store)
const lines = readline.createInterface({input: process.stdin})[Symbol.asyncIterator]()

const casKey = `/bench/cas/${id}`
let value = 0
async function cas(): Promise<void> {
  const kv = await store.get(casKey)
  const r = await store.txn(
    [kv ? {key: casKey, modRevision: kv.modRevision} : {key: casKey, absent: true}],
    [{put: casKey, value: `${++value}`.padEnd(1000, 'x')}],
  )
  if (!r.succeeded) throw new Error('raw CAS on a key nobody else writes failed')
}

async function allocate(host: string, handle: string): Promise<void> {
  const r = await autoAssign(ctx, {host, num4: 1, num6: 0, handle})
  if (r.v4.ips.length !== 1) throw new Error(`${host}: no address: ${r.v4.messages.join('; ')}`)
}

try {
  for (let round = 0; round < rounds; round++) {
    const host = `w${id}-r${round}`
    if (mode === 'alloc') await allocate(host, `${host}-warm`)
    else await cas()
    process.stdout.write('ready\n')
    const cmd = await lines.next()
    if (cmd.done || cmd.value !== 'go') break
    const t = process.hrtime.bigint()
    for (let i = 0; i < ops; i++) {
      if (mode === 'alloc') await allocate(host, `${host}-${i}`)
      else await cas()
    }
    process.stdout.write(`done ${Number(process.hrtime.bigint() - t) / 1e6}\n`)
  }
} finally {
  await store.close()
  process.stdin.destroy()
}
