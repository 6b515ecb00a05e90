// IPReservation scenarios on every embedded store: reserved addresses are never handed out, wholly reserved
// blocks are never claimed, AssignIP refuses them, existing allocations survive, and utilization is exact.
import assert from 'node:assert/strict'
import {after, describe} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {blockWalk} from '../../../src/lib/ipam/blockgen.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus, utilization} from '../../../src/lib/ipam/query.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {createReservation, listReservations} from '../../../src/lib/ipam/reservation.ts'
import {formatCidr, parseCidr} from '../../../src/lib/net/cidr.ts'
import {blockCidrs, type Env, openMemory, scenario as runScenario, type StoreOpener, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

async function dumpAll(env: Env): Promise<string> {
  return (await env.store.list('/calico/')).map((kv) => `${kv.key} @${kv.modRevision} ${kv.value}`).join('\n')
}

async function auto(env: Env, host: string, num4: number): Promise<string[]> {
  const r = await autoAssign(env.ctx, {host, num4, num6: 0, handle: `h-${host}`})
  return r.v4.ips.map((ip) => ip.address)
}

function scenarios(name: string, open: StoreOpener): void {
  describe(`${name}: IP reservations`, () => {
    const scenario = (title: string, body: (env: Env) => Promise<void>) => runScenario(open, title, body)

    scenario('AutoAssign never hands out reserved addresses of a newly claimed block', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/26'}])
      await createReservation(env.ctx, {name: 'first-four', reservedCIDRs: ['10.65.0.0/30']})
      assert.deepEqual(await auto(env, 'node-a', 1), ['10.65.0.4'])
      // The whole block: 60 unreserved addresses, then the pool is exhausted.
      const rest = await autoAssign(env.ctx, {host: 'node-a', num4: 64, num6: 0, handle: 'h-bulk'})
      assert.equal(rest.v4.ips.length, 59)
      assert.ok(rest.v4.ips.every((ip) => !['10.65.0.0', '10.65.0.1', '10.65.0.2', '10.65.0.3'].includes(ip.address)))
    })

    scenario('reserved ordinals of an affine block are skipped and stay free', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/26'}])
      assert.deepEqual(await auto(env, 'node-a', 1), ['10.65.0.0'])
      await createReservation(env.ctx, {name: 'two', reservedCIDRs: ['10.65.0.1', '10.65.0.2']})
      assert.deepEqual(await auto(env, 'node-a', 2), ['10.65.0.3', '10.65.0.4'])
      assert.deepEqual(await ipStatus(env.ctx, '10.65.0.1'), {state: 'free'})
    })

    scenario('a borrowed block skips reserved ordinals', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/26'}])
      assert.deepEqual(await auto(env, 'node-a', 1), ['10.65.0.0'])
      await createReservation(env.ctx, {name: 'pair', reservedCIDRs: ['10.65.0.0/31']})
      assert.deepEqual(await auto(env, 'node-b', 1), ['10.65.0.2'])
    })

    scenario('a wholly reserved block is never claimed', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/25', blockSize: 26}])
      const [first, second] = [...blockWalk(parseCidr('10.65.0.0/25'), 26, 'node-a')].map(formatCidr)
      await createReservation(env.ctx, {name: 'whole', reservedCIDRs: [first!]})
      const ips = await auto(env, 'node-a', 1)
      assert.deepEqual(await blockCidrs(env.store), [second])
      assert.ok(parseCidr(second!).base <= parseCidr(`${ips[0]}/32`).base)
      // Asking for more than the unreserved block holds does not spill into the reserved one.
      const r = await autoAssign(env.ctx, {host: 'node-a', num4: 100, num6: 0, handle: 'h-bulk'})
      assert.equal(r.v4.ips.length, 63)
      assert.deepEqual(await blockCidrs(env.store), [second])
    })

    scenario('AssignIP of a reserved address fails and changes nothing', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/24'}])
      await assignIp(env.ctx, {ip: '10.65.0.20', host: 'node-a', handle: 'h1'})
      await createReservation(env.ctx, {name: 'vip', reservedCIDRs: ['10.65.0.10']})
      const before = await dumpAll(env)
      await assert.rejects(
        assignIp(env.ctx, {ip: '10.65.0.10', host: 'node-a', handle: 'h2'}),
        (err: Error) =>
          err instanceof ValidationError && err.message === 'IP address 10.65.0.10 is reserved by IPReservation vip',
      )
      assert.equal(await dumpAll(env), before)
    })

    scenario('existing allocations stay when a reservation covering them is added', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/26'}])
      assert.deepEqual(await auto(env, 'node-a', 3), ['10.65.0.0', '10.65.0.1', '10.65.0.2'])
      await createReservation(env.ctx, {name: 'late', reservedCIDRs: ['10.65.0.0/30']})
      for (const ip of ['10.65.0.0', '10.65.0.1', '10.65.0.2'])
        assert.equal((await ipStatus(env.ctx, ip)).state, 'assigned')
      assert.deepEqual(await auto(env, 'node-a', 1), ['10.65.0.4'])
      // Released reserved addresses are not handed out again either.
      await releaseIps(env.ctx, [{ip: '10.65.0.1'}])
      assert.deepEqual(await auto(env, 'node-a', 1), ['10.65.0.5'])
      assert.equal((await listReservations(env.ctx)).length, 1)
    })

    scenario('utilization counts reserved addresses exactly (overlaps once, allocated ones not free)', async (env) => {
      await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/24'}])
      await assignIp(env.ctx, {ip: '10.65.0.5', host: 'node-a', handle: 'h1'})
      await assignIp(env.ctx, {ip: '10.65.0.10', host: 'node-a', handle: 'h2'})
      await createReservation(env.ctx, {name: 'r1', reservedCIDRs: ['10.65.0.0/30']})
      await createReservation(env.ctx, {name: 'r2', reservedCIDRs: ['10.65.0.2/31', '10.65.0.4/30']})
      await createReservation(env.ctx, {name: 'r3', reservedCIDRs: ['10.65.0.200/29']})
      const [u] = await utilization(env.ctx)
      assert.deepEqual(
        {capacity: u!.capacity, inUse: u!.inUse, reserved: u!.reserved, free: u!.free},
        // 16 reserved (8 in the block, 8 outside); 256 - 2 allocated - 15 reserved-and-unallocated free.
        {capacity: 256n, inUse: 2n, reserved: 16n, free: 239n},
      )
      assert.deepEqual(u!.blocks, [
        {name: '10.65.0.0/26', cidr: '10.65.0.0/26', capacity: 64n, inUse: 2n, reserved: 8n, free: 55n},
      ])
    })
  })
}

scenarios('MemoryStore', openMemory)
scenarios('SqliteStore', sqlite.open)
