// The per-host block cap (maxBlocksPerHost) under a race between two allocations of the same host: the second
// claims a block between the first one's count of the host's blocks and its own claim. The first claim must
// then lose (its guard on the host's affinities fails), count again, and use the block the other one claimed.
import assert from 'node:assert/strict'
import {after, describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {blockWalk} from '../../../src/lib/ipam/blockgen.ts'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {parseCidr} from '../../../src/lib/net/cidr.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {
  affinityList,
  assertInvariants,
  freshCtx,
  interceptGet,
  openMemory,
  type StoreOpener,
  tempSqlite,
} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

for (const [name, open] of [
  ['MemoryStore', openMemory],
  ['SqliteStore', sqlite.open],
] as const) {
  describe(`block cap under a same-host race (${name})`, () => {
    for (const strictAffinity of [true, false]) {
      it(`maxBlocksPerHost 1${strictAffinity ? ', strict affinity' : ''}: the host still ends with one block, and both get addresses from it`, async () => {
        const env = await freshCtx({open: open as StoreOpener})
        await createPools(env.ctx, [{name: 'p', cidr: '10.40.0.0/16'}])
        // The global cap needs strict affinity; without it, the request's own cap (the Windows path) applies.
        if (strictAffinity) await updateConfig(env.ctx, {strictAffinity, maxBlocksPerHost: 1})
        const cap = strictAffinity ? {} : {maxBlocksPerHost: 1}
        // The first block the host would claim: the first allocation looks it up just before claiming.
        const first = blockWalk(parseCidr('10.40.0.0/16'), 26, 'h1').next().value!
        let other: string | undefined
        const racing = interceptGet(env.store, keys.block(first), async (read) => {
          // The other allocation of h1 runs in between: it counts 0 blocks too, and claims `first`.
          other = (
            await autoAssign(makeCtx(env.store, {clock: env.clock}), {
              host: 'h1',
              num4: 1,
              num6: 0,
              handle: 'other',
              ...cap,
            })
          ).v4.ips[0]?.address
          return read()
        })
        const r = await autoAssign(makeCtx(racing, {clock: env.clock}), {
          host: 'h1',
          num4: 1,
          num6: 0,
          handle: 'mine',
          ...cap,
        })
        assert.ok(other, 'the racing allocation ran')
        assert.equal(r.v4.ips.length, 1, r.v4.messages.join('; '))
        assert.equal((await affinityList(env.store)).length, 1, `blocks of h1: ${await affinityList(env.store)}`)
        assert.notEqual(r.v4.ips[0]!.address, other)
        await assertInvariants(env.store)
      })
    }
  })
}
