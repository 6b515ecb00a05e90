// Allocator scenarios in the style of upstream's ipam_test.go, written once and run against any Store.
// The *.test.ts files call the groups below for MemoryStore and SqliteStore; an etcd backend only has to
// call allocatorScenarios('etcd', open).
//
// Every scenario runs on a fresh store with a fake clock that starts at T0, and ends with
// assertInvariants (blocks valid, handles exact, affinities consistent both ways, no overlapping blocks).
import assert from 'node:assert/strict'
import {describe} from 'node:test'
import {ConflictError, NotFoundError, ValidationError} from '../../../src/lib/errors.ts'
import {releaseBlockAffinity} from '../../../src/lib/ipam/affinity.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {type AutoAssignArgs, autoAssign, blockCap, shortfall} from '../../../src/lib/ipam/autoassign.ts'
import {blockWalk} from '../../../src/lib/ipam/blockgen.ts'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import {listPools, loadConfig, makeCtx} from '../../../src/lib/ipam/context.ts'
import {decodeNode, upsertNode} from '../../../src/lib/ipam/node.ts'
import {encodePool, type PoolInput} from '../../../src/lib/ipam/pool.ts'
import {createPools, deletePool, getPool} from '../../../src/lib/ipam/pool-admin.ts'
import {borrowedIps, ipsByHandle, ipStatus, ORPHANED, utilization} from '../../../src/lib/ipam/query.ts'
import {DEFAULT_IPAM_CONFIG} from '../../../src/lib/ipam/records.ts'
import {releaseByHandle, releaseIps} from '../../../src/lib/ipam/release.ts'
import {formatCidr, formatIp, parseCidr} from '../../../src/lib/net/cidr.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {
  affinityList,
  affinityState,
  blockCidrs,
  type Env,
  handleCounts,
  interceptGet,
  rawBlock,
  rawValue,
  scenario,
  seed,
  type StoreOpener,
  storedBlock,
  T0,
} from './helpers.ts'

const CONFIRMED = '{"state":"confirmed","deleted":false}'

// ---- small helpers -------------------------------------------------------------------------------

async function pools(env: Env, ...inputs: PoolInput[]): Promise<void> {
  await createPools(env.ctx, inputs)
}

/** AutoAssign IPv4 only; returns the v4 result. */
async function assign4(env: Env, host: string, num4: number, more: Partial<AutoAssignArgs> = {}) {
  const r = await autoAssign(env.ctx, {host, num4, num6: 0, ...more})
  assert.deepEqual(r.v6, {requested: 0, ips: [], messages: []})
  return r.v4
}

const addrs = (r: {ips: {address: string}[]}): string[] => r.ips.map((i) => i.address)

/** The first `n` block CIDRs of `host`'s walk through `pool` (the order new blocks are claimed in). */
function walk(pool: string, blockSize: number, host: string, n: number): string[] {
  const out: string[] = []
  for (const c of blockWalk(parseCidr(pool), blockSize, host)) {
    out.push(formatCidr(c))
    if (out.length === n) break
  }
  return out
}

/** The address at `ordinal` of block `cidr`. */
function at(cidr: string, ordinal: number): string {
  const c = parseCidr(cidr)
  return formatIp(c.family, c.base + BigInt(ordinal))
}

const range = (from: number, to: number): number[] => Array.from({length: to - from}, (_, i) => from + i)

async function rejectsWith(p: Promise<unknown>, cls: new (...a: never[]) => Error, message: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(
      err instanceof cls,
      `expected ${cls.name}, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
    )
    assert.match(err.message, message)
    return true
  })
}

/** Run `fn` and assert it wrote nothing: same revision, same keys, values and mod-revisions. */
async function unchanged(env: Env, fn: () => Promise<void>): Promise<void> {
  const snapshot = async () => (await env.store.list('/')).map((kv) => `${kv.key} @${kv.modRevision} ${kv.value}`)
  const before = await env.store.revision()
  const dump = await snapshot()
  await fn()
  assert.equal(await env.store.revision(), before, 'the store revision changed')
  assert.deepEqual(await snapshot(), dump, 'the store contents changed')
}

// ================================================================================================

export function autoAssignScenarios(name: string, open: StoreOpener): void {
  const s = (title: string, body: (env: Env) => Promise<void>, opts?: {todo?: string}) =>
    scenario(open, title, body, opts)

  describe(`${name}: AutoAssign`, () => {
    s('claims a /26 for the host and hands out its network address first', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const r = await assign4(env, 'host-a', 1, {handle: 'h1', attrs: {namespace: 'default', pod: 'web-0'}})
      const [block] = walk('10.65.0.0/16', 26, 'host-a', 1) as [string]
      assert.deepEqual(r.messages, [])
      assert.equal(shortfall(r, 4), undefined)
      assert.deepEqual(r.ips, [{address: at(block, 0), family: 4, cidr: `${at(block, 0)}/26`, block}])

      // The block, byte for byte as Calico would store it (the sequence number is the claim time in ns).
      const raw = (await rawBlock(env.store, block))!
      const seq = BigInt(/"sequenceNumber":(\d+)/.exec(raw)![1]!)
      const t0ns = BigInt(Date.parse(T0)) * 1_000_000n
      assert.ok(seq >= t0ns && seq < t0ns + 1_000_000n, `sequence number ${seq} is not the claim time`)
      const nulls = Array<string>(63).fill('null').join(',')
      assert.equal(
        raw,
        `{"cidr":"${block}","affinity":"host:host-a","affinity_claim_time":"${T0}","allocations":[0,${nulls}],` +
          `"unallocated":[${range(1, 64).join(',')}],` +
          `"attributes":[{"handle_id":"h1","secondary":{"namespace":"default","node":"host-a","pod":"web-0"}}],` +
          `"sequenceNumber":${seq},"sequenceNumberForAllocation":{"0":${seq}},"deleted":false}`,
      )
      assert.equal(await rawValue(env.store, keys.affinity('host-a', parseCidr(block))), CONFIRMED)
      assert.equal(await rawValue(env.store, keys.handle('h1')), `{"block":{"${block}":1},"deleted":false}`)
      const node = decodeNode((await rawValue(env.store, keys.node('host-a')))!)
      assert.equal(node.name, 'host-a')
      assert.deepEqual(node.labels, {})
      assert.equal(
        await rawValue(env.store, keys.ipamConfig()),
        undefined,
        'reading the default config must not write it',
      )
    })

    s('a second request on the same host uses the same block with consecutive ordinals', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const first = await assign4(env, 'host-a', 1, {handle: 'h1'})
      const block = first.ips[0]!.block
      const second = await assign4(env, 'host-a', 1, {handle: 'h2'})
      const third = await assign4(env, 'host-a', 3, {handle: 'h3'})
      assert.deepEqual(addrs(second), [at(block, 1)])
      assert.deepEqual(addrs(third), [at(block, 2), at(block, 3), at(block, 4)])
      assert.deepEqual(await blockCidrs(env.store), [block])
      const b = (await storedBlock(env.store, block))!
      assert.deepEqual(b.allocations.slice(0, 6), [0, 1, 2, 2, 2, null])
      assert.deepEqual(b.unallocated, range(5, 64))
      assert.deepEqual(await handleCounts(env.store, 'h3'), {[block]: 3})
    })

    s('a full block makes the next request claim a second block', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const [b0, b1] = walk('10.65.0.0/16', 26, 'host-a', 2) as [string, string]
      const full = await assign4(env, 'host-a', 64, {handle: 'h1'})
      assert.deepEqual(
        addrs(full),
        range(0, 64).map((o) => at(b0, o)),
      )
      assert.deepEqual((await storedBlock(env.store, b0))!.unallocated, [])
      const next = await assign4(env, 'host-a', 1, {handle: 'h2'})
      assert.deepEqual(
        next.ips.map((i) => i.cidr),
        [`${at(b1, 0)}/26`],
      )
      assert.deepEqual(await affinityList(env.store), [`host-a ${b0}`, `host-a ${b1}`].sort())
    })

    s('130 addresses in one request span three blocks (64 + 64 + 2), all distinct', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const [b0, b1, b2] = walk('10.65.0.0/16', 26, 'host-a', 3) as [string, string, string]
      const r = await assign4(env, 'host-a', 130, {handle: 'many'})
      assert.equal(r.ips.length, 130)
      assert.equal(new Set(addrs(r)).size, 130)
      assert.deepEqual(addrs(r), [
        ...range(0, 64).map((o) => at(b0, o)),
        ...range(0, 64).map((o) => at(b1, o)),
        at(b2, 0),
        at(b2, 1),
      ])
      assert.deepEqual(await handleCounts(env.store, 'many'), {[b0]: 64, [b1]: 64, [b2]: 2})
      assert.deepEqual(await blockCidrs(env.store), [b0, b1, b2].sort())
    })

    s('two hosts get different blocks, each affine to its own host', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const a = (await assign4(env, 'host-a', 1)).ips[0]!
      const b = (await assign4(env, 'host-b', 1)).ips[0]!
      assert.equal(a.block, walk('10.65.0.0/16', 26, 'host-a', 1)[0])
      assert.equal(
        b.block,
        walk('10.65.0.0/16', 26, 'host-b', 2).find((c) => c !== a.block),
      )
      assert.notEqual(a.block, b.block)
      assert.equal((await storedBlock(env.store, a.block))!.affinity, 'host:host-a')
      assert.equal((await storedBlock(env.store, b.block))!.affinity, 'host:host-b')
      assert.equal(b.address, at(b.block, 0))
      // No handle was given: no handle key is written.
      assert.deepEqual(await env.store.listKeys(keys.handlePrefix()), [])
    })

    s('blockSize 29 hands out 8 addresses per block', async (env) => {
      await pools(env, {name: 'small-blocks', cidr: '10.66.0.0/24', blockSize: 29})
      const [b0, b1] = walk('10.66.0.0/24', 29, 'host-a', 2) as [string, string]
      const r = await assign4(env, 'host-a', 10, {handle: 'h'})
      assert.deepEqual(addrs(r), [...range(0, 8).map((o) => at(b0, o)), at(b1, 0), at(b1, 1)])
      assert.ok(r.ips.every((i) => i.cidr.endsWith('/29')))
      assert.deepEqual(await handleCounts(env.store, 'h'), {[b0]: 8, [b1]: 2})
    })

    s('blockSize 32 makes every address its own block', async (env) => {
      await pools(env, {name: 'single', cidr: '10.67.0.0/28', blockSize: 32})
      const r = await assign4(env, 'host-a', 3, {handle: 'h'})
      assert.equal(r.ips.length, 3)
      for (const ip of r.ips) {
        assert.equal(ip.block, `${ip.address}/32`)
        assert.equal(ip.cidr, `${ip.address}/32`)
        assert.equal(await affinityState(env.store, 'host-a', ip.block), 'confirmed')
      }
      assert.equal(new Set(r.ips.map((i) => i.block)).size, 3)
      assert.deepEqual(await handleCounts(env.store, 'h'), Object.fromEntries(r.ips.map((i) => [i.block, 1])))
    })

    s('IPv6 pools use /122 blocks', async (env) => {
      await pools(env, {name: 'pool6', cidr: 'fd80:24e2:f998:72d6::/64'})
      const [block] = walk('fd80:24e2:f998:72d6::/64', 122, 'host-a', 1) as [string]
      const r = await autoAssign(env.ctx, {host: 'host-a', num4: 0, num6: 2, handle: 'h6'})
      assert.deepEqual(r.v4, {requested: 0, ips: [], messages: []})
      assert.deepEqual(
        r.v6.ips,
        [0, 1].map((o) => ({address: at(block, o), family: 6, cidr: `${at(block, o)}/122`, block})),
      )
      assert.ok(await rawValue(env.store, `/calico/ipam/v2/assignment/ipv6/block/${block.replace('/', '-')}`))
      assert.equal(await affinityState(env.store, 'host-a', block), 'confirmed')
      assert.deepEqual(await handleCounts(env.store, 'h6'), {[block]: 2})
    })

    s('dual stack: one IPv4 and one IPv6 address with block-masked CIDRs', async (env) => {
      await pools(env, {name: 'pool4', cidr: '10.65.0.0/16'}, {name: 'pool6', cidr: 'fd80:24e2:f998:72d6::/64'})
      const r = await autoAssign(env.ctx, {host: 'host-a', num4: 1, num6: 1, handle: 'dual'})
      assert.equal(r.v4.ips.length, 1)
      assert.equal(r.v6.ips.length, 1)
      const v4 = r.v4.ips[0]!
      const v6 = r.v6.ips[0]!
      assert.equal(v4.family, 4)
      assert.equal(v6.family, 6)
      assert.match(v4.cidr, /^10\.65\.\d+\.\d+\/26$/)
      assert.match(v6.cidr, /^fd80:24e2:f998:72d6:[0-9a-f:]+\/122$/)
      assert.equal(v4.cidr, `${v4.address}/26`)
      assert.equal(v6.cidr, `${v6.address}/122`)
      assert.deepEqual(await handleCounts(env.store, 'dual'), {[v4.block]: 1, [v6.block]: 1})
      assert.deepEqual(await affinityList(env.store), [`host-a ${v4.block}`, `host-a ${v6.block}`].sort())
    })

    s('requested pools are used by name or CIDR, in the requested order', async (env) => {
      await pools(env, {name: 'pool-a', cidr: '10.1.0.0/16'}, {name: 'pool-b', cidr: '10.2.0.0/29', blockSize: 29})
      const [a0] = walk('10.1.0.0/16', 26, 'host-a', 1) as [string]
      const r = await assign4(env, 'host-a', 10, {handle: 'h', pools4: ['pool-b', 'pool-a']})
      assert.deepEqual(addrs(r), [...range(0, 8).map((o) => at('10.2.0.0/29', o)), at(a0, 0), at(a0, 1)])
      // By CIDR: pool-b is full now, so asking for it alone comes back short.
      const byCidr = await assign4(env, 'host-a', 1, {pools4: ['10.2.0.0/29']})
      assert.deepEqual(byCidr.ips, [])
      assert.deepEqual(byCidr.messages, ['No IPs available in pools: [10.2.0.0/29]'])
      const other = await assign4(env, 'host-a', 1, {pools4: ['10.1.0.0/16']})
      assert.deepEqual(addrs(other), [at(a0, 2)])
    })

    s('an unknown requested pool is NotFound and a v6 pool requested for v4 is a ValidationError', async (env) => {
      await pools(env, {name: 'pool4', cidr: '10.65.0.0/16'}, {name: 'pool6', cidr: 'fd80::/64'})
      await rejectsWith(
        assign4(env, 'host-a', 1, {pools4: ['nope']}),
        NotFoundError,
        /the given pool \(nope\) does not exist, or is not enabled/,
      )
      await rejectsWith(
        assign4(env, 'host-a', 1, {pools4: ['10.99.0.0/16']}),
        NotFoundError,
        /does not exist, or is not enabled/,
      )
      await rejectsWith(assign4(env, 'host-a', 1, {pools4: ['pool6']}), ValidationError, /IPv6/)
      await rejectsWith(
        autoAssign(env.ctx, {host: 'host-a', num4: 0, num6: 1, pools6: ['pool4']}),
        ValidationError,
        /IPv4/,
      )
      assert.deepEqual(await blockCidrs(env.store), [])
    })

    s('a disabled pool is not used, and requesting it is NotFound', async (env) => {
      await pools(
        env,
        {name: 'a-disabled', cidr: '10.3.0.0/16', disabled: true},
        {name: 'b-enabled', cidr: '10.4.0.0/16'},
      )
      const r = await assign4(env, 'host-a', 1)
      assert.match(r.ips[0]!.address, /^10\.4\./)
      await rejectsWith(
        assign4(env, 'host-a', 1, {pools4: ['a-disabled']}),
        NotFoundError,
        /\(a-disabled\) does not exist, or is not enabled/,
      )
    })

    s('a Manual pool is used only when requested', async (env) => {
      await pools(env, {name: 'a-manual', cidr: '10.5.0.0/16', assignmentMode: 'Manual'})
      await rejectsWith(assign4(env, 'host-a', 1), NotFoundError, /no configured Calico pools for node host-a/)
      await pools(env, {name: 'b-auto', cidr: '10.6.0.0/16'})
      assert.match((await assign4(env, 'host-a', 1)).ips[0]!.address, /^10\.6\./)
      assert.match((await assign4(env, 'host-a', 1, {pools4: ['a-manual']})).ips[0]!.address, /^10\.5\./)
    })

    s('nodeSelector picks pools by the node labels', async (env) => {
      await pools(
        env,
        {name: 'zone-a', cidr: '10.10.0.0/16', nodeSelector: 'zone == "a"'},
        {name: 'unzoned', cidr: '10.20.0.0/16', nodeSelector: '!has(zone)'},
      )
      await upsertNode(env.store, 'node-a', {zone: 'a'}, env.clock.now())
      await upsertNode(env.store, 'node-b', {zone: 'b'}, env.clock.now())
      assert.match((await assign4(env, 'node-a', 1)).ips[0]!.address, /^10\.10\./)
      // No Node record yet: one is created without labels, so only !has(zone) matches.
      assert.match((await assign4(env, 'node-plain', 1)).ips[0]!.address, /^10\.20\./)
      assert.ok(await rawValue(env.store, keys.node('node-plain')))
      await rejectsWith(assign4(env, 'node-b', 1), NotFoundError, /no configured Calico pools for node node-b/)
      // Requested pools ignore selectors, as upstream does.
      assert.match((await assign4(env, 'node-b', 1, {pools4: ['zone-a']})).ips[0]!.address, /^10\.10\./)
    })

    s('allowedUses: a Tunnel-only pool is not used for workloads', async (env) => {
      await pools(env, {name: 'a-tunnel', cidr: '10.7.0.0/16', allowedUses: ['Tunnel']})
      await rejectsWith(assign4(env, 'host-a', 1), NotFoundError, /no pools match the required use \(Workload\)/)
      await pools(env, {name: 'b-workload', cidr: '10.8.0.0/16', allowedUses: ['Workload']})
      assert.match((await assign4(env, 'host-a', 1)).ips[0]!.address, /^10\.8\./)
      assert.match((await assign4(env, 'host-a', 1, {use: 'Tunnel'})).ips[0]!.address, /^10\.7\./)
      await rejectsWith(
        assign4(env, 'host-a', 1, {pools4: ['a-tunnel']}),
        ValidationError,
        /not allowed for use "Workload"/,
      )
    })

    s('strict affinity: a host whose block is full cannot borrow from another host', async (env) => {
      await pools(env, {name: 'tiny', cidr: '10.30.0.0/28', blockSize: 29})
      await updateConfig(env.ctx, {strictAffinity: true})
      const a = await assign4(env, 'host-a', 8, {handle: 'a'})
      const b = await assign4(env, 'host-b', 8, {handle: 'b'})
      assert.equal(a.ips.length + b.ips.length, 16)
      assert.notEqual(a.ips[0]!.block, b.ips[0]!.block)
      const more = await assign4(env, 'host-a', 1, {handle: 'a2'})
      assert.deepEqual(more.ips, [])
      assert.deepEqual(more.messages, ['No more free affine blocks and strict affinity enabled'])
      assert.equal(
        shortfall(more, 4),
        'Assigned 0 out of 1 requested IPv4 addresses; No more free affine blocks and strict affinity enabled',
      )
      assert.equal(await handleCounts(env.store, 'a2'), undefined)
    })

    s("without strict affinity a host borrows from another host's block", async (env) => {
      await pools(env, {name: 'tiny', cidr: '10.30.0.0/28', blockSize: 29})
      const a = await assign4(env, 'host-a', 8, {handle: 'a'})
      const b = await assign4(env, 'host-b', 7, {handle: 'b'})
      const bBlock = b.ips[0]!.block
      const more = await assign4(env, 'host-a', 2, {handle: 'a2'})
      assert.deepEqual(addrs(more), [at(bBlock, 7)])
      assert.deepEqual(more.messages, ['No IPs available in pools: [10.30.0.0/28]'])
      assert.equal(
        shortfall(more, 4),
        'Assigned 1 out of 2 requested IPv4 addresses; No IPs available in pools: [10.30.0.0/28]',
      )
      const blk = (await storedBlock(env.store, bBlock))!
      assert.equal(blk.affinity, 'host:host-b', 'borrowing must not move the block')
      assert.equal(blk.attributes![blk.allocations[7]!]!.secondary!.node, 'host-a')
      assert.deepEqual(await handleCounts(env.store, 'a2'), {[bBlock]: 1})
      const borrowed = await borrowedIps(env.ctx)
      assert.deepEqual(borrowed, {
        borrowed: [
          {ip: at(bBlock, 7), borrowingNode: 'host-a', block: bBlock, blockOwner: 'host-b', type: '', allocatedTo: ''},
        ],
        withoutNode: 0,
      })
      assert.equal(a.ips.length, 8)
    })

    s('maxBlocksPerHost 1 (strict affinity) stops a host at one block', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.31.0.0/24', blockSize: 29})
      await updateConfig(env.ctx, {strictAffinity: true, maxBlocksPerHost: 1})
      const r = await assign4(env, 'host-a', 10, {handle: 'h'})
      assert.equal(r.ips.length, 8)
      assert.deepEqual(r.messages, [
        'Need to allocate an IPAM block but could not - limit of 1 blocks reached for this node',
      ])
      assert.equal(
        shortfall(r, 4),
        'Assigned 8 out of 10 requested IPv4 addresses; Need to allocate an IPAM block but could not - limit of 1 blocks reached for this node',
      )
      assert.equal((await blockCidrs(env.store)).length, 1)
      // Another host still gets its own block.
      assert.equal((await assign4(env, 'host-b', 1)).ips.length, 1)
    })

    s(
      'a per-request maxBlocksPerHost caps blocks without a global limit; the global limit wins when lower',
      async (env) => {
        await pools(env, {name: 'pool1', cidr: '10.31.0.0/24', blockSize: 29})
        const r = await assign4(env, 'host-a', 20, {handle: 'h', maxBlocksPerHost: 2})
        assert.equal(r.ips.length, 16)
        assert.deepEqual(r.messages, [
          'Need to allocate an IPAM block but could not - limit of 2 blocks reached for this node',
        ])
        await updateConfig(env.ctx, {strictAffinity: true, maxBlocksPerHost: 1})
        const b = await assign4(env, 'host-b', 9, {maxBlocksPerHost: 5})
        assert.equal(b.ips.length, 8)
        assert.deepEqual(b.messages, [
          'Need to allocate an IPAM block but could not - limit of 1 blocks reached for this node',
        ])
      },
    )

    s('the default block cap is 20', async (env) => {
      const d = {...DEFAULT_IPAM_CONFIG}
      assert.equal(blockCap(d), 20)
      assert.equal(blockCap(d, 0), 20)
      assert.equal(blockCap(d, 4), 4)
      assert.equal(blockCap({...d, maxBlocksPerHost: 3}), 3)
      assert.equal(blockCap({...d, maxBlocksPerHost: 3}, 5), 3)
      assert.equal(blockCap({...d, maxBlocksPerHost: 3}, 2), 2)
      await pools(env, {name: 'singles', cidr: '10.32.0.0/27', blockSize: 32})
      const r = await assign4(env, 'host-a', 25, {handle: 'h'})
      assert.equal(r.ips.length, 20)
      assert.deepEqual(r.messages, [
        'Need to allocate an IPAM block but could not - limit of 20 blocks reached for this node',
      ])
      assert.equal((await affinityList(env.store)).length, 20)
    })

    s('autoAllocateBlocks false: existing affine blocks are used but no new block is claimed', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.33.0.0/24', blockSize: 29})
      const first = await assign4(env, 'host-a', 1)
      const block = first.ips[0]!.block
      await updateConfig(env.ctx, {strictAffinity: true, autoAllocateBlocks: false})
      const r = await assign4(env, 'host-a', 9, {handle: 'h'})
      assert.deepEqual(
        addrs(r),
        range(1, 8).map((o) => at(block, o)),
      )
      assert.equal(r.messages.length, 1)
      assert.match(r.messages[0]!, /autoAllocateBlocks/)
      const other = await assign4(env, 'host-b', 1)
      assert.deepEqual(other.ips, [])
      assert.deepEqual(await blockCidrs(env.store), [block])
    })

    s('pool exhaustion gives a partial result naming the exhausted pools', async (env) => {
      await pools(
        env,
        {name: 'p1', cidr: '10.40.0.0/30', blockSize: 30},
        {name: 'p2', cidr: '10.40.0.4/30', blockSize: 30},
      )
      const r = await assign4(env, 'host-a', 10, {handle: 'h'})
      assert.equal(r.ips.length, 8)
      assert.deepEqual(
        [...addrs(r)].sort(),
        range(0, 8).map((o) => `10.40.0.${o}`),
      )
      assert.deepEqual(r.messages, ['No IPs available in pools: [10.40.0.0/30 10.40.0.4/30]'])
      assert.equal(
        shortfall(r, 4),
        'Assigned 8 out of 10 requested IPv4 addresses; No IPs available in pools: [10.40.0.0/30 10.40.0.4/30]',
      )
      const b = await assign4(env, 'host-b', 1, {handle: 'hb'})
      assert.equal(
        shortfall(b, 4),
        'Assigned 0 out of 1 requested IPv4 addresses; No IPs available in pools: [10.40.0.0/30 10.40.0.4/30]',
      )
      assert.equal(await handleCounts(env.store, 'hb'), undefined)
    })

    s('rejects a bad request count before touching the store', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      await unchanged(env, async () => {
        await rejectsWith(autoAssign(env.ctx, {host: 'host-a', num4: 0, num6: 0}), ValidationError, /at least one/)
        await rejectsWith(autoAssign(env.ctx, {host: 'host-a', num4: -1, num6: 0}), ValidationError, /IPv4/)
        await rejectsWith(autoAssign(env.ctx, {host: 'host-a', num4: 1.5, num6: 0}), ValidationError, /IPv4/)
      })
    })
  })

  describe(`${name}: AssignIP`, () => {
    s('assigning an address in an unclaimed block claims the block for the host', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.50.0.0/16'})
      const r = await assignIp(env.ctx, {ip: '10.50.3.7', host: 'host-a', handle: 'h'})
      assert.deepEqual(r, {address: '10.50.3.7', family: 4, cidr: '10.50.3.7/26', block: '10.50.3.0/26'})
      const b = (await storedBlock(env.store, '10.50.3.0/26'))!
      assert.equal(b.affinity, 'host:host-a')
      assert.equal(b.affinityClaimTime, T0)
      assert.deepEqual(
        b.unallocated,
        range(0, 64).filter((o) => o !== 7),
      )
      assert.equal(b.allocations[7], 0)
      assert.equal(await affinityState(env.store, 'host-a', '10.50.3.0/26'), 'confirmed')
      assert.deepEqual(await handleCounts(env.store, 'h'), {'10.50.3.0/26': 1})
      assert.ok(await rawValue(env.store, keys.node('host-a')))
      // The claimed block is now the host's affine block: AutoAssign starts at its head.
      assert.deepEqual(addrs(await assign4(env, 'host-a', 2)), ['10.50.3.0', '10.50.3.1'])
      const st = await ipStatus(env.ctx, '10.50.3.7')
      assert.equal(st.state, 'assigned')
      assert.equal(st.state === 'assigned' && st.owner.handle, 'h')
    })

    s('assigning an address that is already assigned is a ConflictError and changes nothing', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.50.0.0/16'})
      await assignIp(env.ctx, {ip: '10.50.3.7', host: 'host-a', handle: 'h'})
      await upsertNode(env.store, 'host-b', {}, env.clock.now()) // a failed request still records a new host's Node
      await unchanged(env, async () => {
        await rejectsWith(
          assignIp(env.ctx, {ip: '10.50.3.7', host: 'host-a', handle: 'h2'}),
          ConflictError,
          /already assigned/,
        )
        await rejectsWith(
          assignIp(env.ctx, {ip: '10.50.3.7', host: 'host-b', handle: 'h'}),
          ConflictError,
          /already assigned/,
        )
      })
      assert.deepEqual(await handleCounts(env.store, 'h'), {'10.50.3.0/26': 1})
    })

    s('an address outside every enabled pool is a ValidationError', async (env) => {
      await pools(env, {name: 'a-pool', cidr: '10.50.0.0/16'}, {name: 'b-off', cidr: '10.51.0.0/16', disabled: true})
      await unchanged(env, async () => {
        await rejectsWith(
          assignIp(env.ctx, {ip: '192.168.0.1', host: 'host-a'}),
          ValidationError,
          /not in a configured pool/,
        )
        await rejectsWith(
          assignIp(env.ctx, {ip: '10.51.0.1', host: 'host-a'}),
          ValidationError,
          /not in a configured pool/,
        )
        await rejectsWith(assignIp(env.ctx, {ip: '10.50.0.300', host: 'host-a'}), ValidationError, /invalid IP/)
      })
    })

    s(
      "strict affinity: assigning into another host's block is a ConflictError; without it the address is borrowed",
      async (env) => {
        await pools(env, {name: 'pool1', cidr: '10.50.0.0/16'})
        const block = (await assign4(env, 'host-a', 1)).ips[0]!.block
        await updateConfig(env.ctx, {strictAffinity: true})
        await upsertNode(env.store, 'host-b', {}, env.clock.now())
        await unchanged(env, async () => {
          await rejectsWith(
            assignIp(env.ctx, {ip: at(block, 9), host: 'host-b', handle: 'hb'}),
            ConflictError,
            /affinity/,
          )
        })
        await updateConfig(env.ctx, {strictAffinity: false})
        const r = await assignIp(env.ctx, {ip: at(block, 9), host: 'host-b', handle: 'hb'})
        assert.equal(r.block, block)
        const b = (await storedBlock(env.store, block))!
        assert.equal(b.affinity, 'host:host-a')
        assert.equal(b.attributes![b.allocations[9]!]!.secondary!.node, 'host-b')
        assert.deepEqual(await handleCounts(env.store, 'hb'), {[block]: 1})
      },
    )
  })

  describe(`${name}: concurrency`, () => {
    s('20 concurrent requests for one host get distinct addresses and exact handles', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const results = await Promise.all(range(0, 20).map((i) => assign4(env, 'host-a', 3, {handle: `h${i}`})))
      const all = results.flatMap(addrs)
      assert.equal(all.length, 60)
      assert.equal(new Set(all).size, 60)
      for (const [i, r] of results.entries()) {
        const per: Record<string, number> = {}
        for (const ip of r.ips) per[ip.block] = (per[ip.block] ?? 0) + 1
        assert.deepEqual(await handleCounts(env.store, `h${i}`), per)
      }
      for (const b of await blockCidrs(env.store))
        assert.equal((await storedBlock(env.store, b))!.affinity, 'host:host-a')
    })

    s('20 concurrent requests from 20 hosts each get an address in their own block', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const hosts = range(0, 20).map((i) => `node-${i}`)
      const results = await Promise.all(hosts.map((h) => assign4(env, h, 2, {handle: `h-${h}`})))
      const all = results.flatMap(addrs)
      assert.equal(new Set(all).size, 40)
      for (const [i, r] of results.entries()) {
        assert.equal(r.ips.length, 2)
        assert.equal(r.ips[0]!.block, r.ips[1]!.block)
        assert.equal((await storedBlock(env.store, r.ips[0]!.block))!.affinity, `host:${hosts[i]}`)
      }
      assert.equal((await blockCidrs(env.store)).length, 20)
    })

    s('maxBlocksPerHost holds when requests for one host run concurrently', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.31.0.0/24', blockSize: 29})
      await updateConfig(env.ctx, {strictAffinity: true, maxBlocksPerHost: 1})
      const results = await Promise.all(range(0, 5).map((i) => assign4(env, 'host-a', 3, {handle: `h${i}`})))
      assert.equal((await affinityList(env.store)).length, 1, 'host-a owns more blocks than maxBlocksPerHost allows')
      assert.equal(
        results.reduce((n, r) => n + r.ips.length, 0),
        8,
      )
    })

    s('20 concurrent requests sharing one handle count exactly', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16', blockSize: 28})
      const results = await Promise.all(range(0, 20).map((i) => assign4(env, `host-${i % 3}`, 2, {handle: 'shared'})))
      const all = results.flatMap(addrs)
      assert.equal(new Set(all).size, 40)
      const counts = (await handleCounts(env.store, 'shared'))!
      assert.equal(
        Object.values(counts).reduce((a, b) => a + b, 0),
        40,
      )
      assert.equal((await ipsByHandle(env.ctx, 'shared')).length, 40)
    })
  })
}

// ================================================================================================

export function releaseScenarios(name: string, open: StoreOpener): void {
  const s = (title: string, body: (env: Env) => Promise<void>, opts?: {todo?: string}) =>
    scenario(open, title, body, opts)

  describe(`${name}: ReleaseIPs`, () => {
    s('a released ordinal goes to the tail of the free list and is reused last', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const r = await assign4(env, 'host-a', 3, {handle: 'h'})
      const block = r.ips[0]!.block
      const rel = await releaseIps(env.ctx, [{ip: at(block, 1)}])
      assert.deepEqual(rel, {released: [at(block, 1)], unallocated: []})
      const b = (await storedBlock(env.store, block))!
      assert.deepEqual(b.unallocated, [...range(3, 64), 1])
      assert.equal(b.allocations[1], null)
      assert.deepEqual([...b.sequenceNumberForAllocation.keys()].sort(), ['0', '2'])
      assert.equal(b.attributes!.length, 1, 'no cooldown: the release record is collected at once')
      assert.deepEqual(await handleCounts(env.store, 'h'), {[block]: 2})
      assert.deepEqual(await ipStatus(env.ctx, at(block, 1)), {state: 'free'})
      // FIFO: the next 61 come from the head; ordinal 1 is the very last one handed out.
      const next = await assign4(env, 'host-a', 62)
      assert.deepEqual(
        addrs(next),
        [...range(3, 64), 1].map((o) => at(block, o)),
      )
    })

    s('releasing a free address reports it unallocated and writes nothing', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const block = (await assign4(env, 'host-a', 1)).ips[0]!.block
      await unchanged(env, async () => {
        const rel = await releaseIps(env.ctx, [{ip: at(block, 5)}, {ip: '10.65.255.255'}, {ip: '192.168.1.1'}])
        assert.deepEqual(rel.released, [])
        assert.deepEqual([...rel.unallocated].sort(), [at(block, 5), '10.65.255.255', '192.168.1.1'].sort())
      })
    })

    s(
      'a release guarded by the right handle works; a wrong handle is a ConflictError and changes nothing',
      async (env) => {
        await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
        const r = await assign4(env, 'host-a', 2, {handle: 'mine'})
        const [ip0, ip1] = addrs(r) as [string, string]
        await unchanged(env, async () => {
          await rejectsWith(releaseIps(env.ctx, [{ip: ip0, handle: 'theirs'}]), ConflictError, /does not match/)
        })
        assert.equal((await ipStatus(env.ctx, ip0)).state, 'assigned')
        assert.deepEqual(await releaseIps(env.ctx, [{ip: ip0, handle: 'mine'}]), {released: [ip0], unallocated: []})
        assert.deepEqual(await ipsByHandle(env.ctx, 'mine'), [ip1])
      },
    )

    s("a release guarded by the sequence number works only with the allocation's sequence number", async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const r = await assign4(env, 'host-a', 1, {handle: 'h'})
      const ip = r.ips[0]!.address
      await assign4(env, 'host-a', 1, {handle: 'h'}) // bumps the block's sequence number
      const st = await ipStatus(env.ctx, ip)
      assert.equal(st.state, 'assigned')
      const seq = st.state === 'assigned' ? st.owner.sequenceNumber! : 0n
      const block = (await storedBlock(env.store, r.ips[0]!.block))!
      assert.equal(block.sequenceNumber, seq + 1n)
      await unchanged(env, async () => {
        await rejectsWith(releaseIps(env.ctx, [{ip, sequenceNumber: seq + 1n}]), ConflictError, /update conflict/)
      })
      assert.deepEqual(await releaseIps(env.ctx, [{ip, sequenceNumber: seq, handle: 'h'}]), {
        released: [ip],
        unallocated: [],
      })
    })

    s('releasing the last address of a non-affine block deletes the block', async (env) => {
      await pools(env, {name: 'tiny', cidr: '10.30.0.0/28', blockSize: 29})
      const a = await assign4(env, 'host-a', 7, {handle: 'a'})
      const block = a.ips[0]!.block
      // host-b fills the pool's other block, so its next address is borrowed from host-a's block.
      const b = await assign4(env, 'host-b', 8, {handle: 'b'})
      const borrowed = await assign4(env, 'host-b', 1, {handle: 'b2'})
      assert.deepEqual(addrs(borrowed), [at(block, 7)])
      assert.equal(await releaseBlockAffinity(env.ctx, 'host-a', parseCidr(block), {requireEmpty: false}), 'released')
      await releaseByHandle(env.ctx, 'a')
      assert.ok(await storedBlock(env.store, block), 'the borrowed address keeps the block')
      await releaseIps(env.ctx, [{ip: at(block, 7)}])
      assert.equal(await storedBlock(env.store, block), undefined)
      assert.equal(await handleCounts(env.store, 'b2'), undefined)
      assert.equal(b.ips.length, 8)
    })

    s('releasing the last address of an affine block keeps the block for the host', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const block = (await assign4(env, 'host-a', 1, {handle: 'h'})).ips[0]!.block
      await releaseIps(env.ctx, [{ip: at(block, 0)}])
      const b = (await storedBlock(env.store, block))!
      assert.equal(b.affinity, 'host:host-a')
      assert.deepEqual(b.unallocated, [...range(1, 64), 0])
      assert.deepEqual(b.attributes, [])
      assert.equal(await affinityState(env.store, 'host-a', block), 'confirmed')
      assert.equal(await handleCounts(env.store, 'h'), undefined)
      assert.deepEqual(addrs(await assign4(env, 'host-a', 1)), [at(block, 1)])
    })

    s("releaseByHandle releases exactly the handle's addresses across blocks and deletes the handle", async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const mine = await assign4(env, 'host-a', 70, {handle: 'multi'})
      const theirs = await assign4(env, 'host-a', 3, {handle: 'other'})
      const b2 = mine.ips[69]!.block
      assert.deepEqual(await handleCounts(env.store, 'multi'), {[mine.ips[0]!.block]: 64, [b2]: 6})
      assert.deepEqual([...(await ipsByHandle(env.ctx, 'multi'))].sort(), [...addrs(mine)].sort())
      const released = await releaseByHandle(env.ctx, 'multi')
      assert.deepEqual([...released].sort(), [...addrs(mine)].sort())
      assert.equal(await handleCounts(env.store, 'multi'), undefined)
      await rejectsWith(ipsByHandle(env.ctx, 'multi'), NotFoundError, /multi/)
      assert.deepEqual(await ipsByHandle(env.ctx, 'other'), addrs(theirs))
      assert.deepEqual(
        addrs(theirs),
        [6, 7, 8].map((o) => at(b2, o)),
      )
      for (const ip of addrs(theirs)) assert.equal((await ipStatus(env.ctx, ip)).state, 'assigned')
      for (const ip of addrs(mine)) assert.equal((await ipStatus(env.ctx, ip)).state, 'free')
    })

    s('releaseByHandle of an unknown handle is NotFound and writes nothing', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      await assign4(env, 'host-a', 1, {handle: 'known'})
      await unchanged(env, async () => {
        await rejectsWith(releaseByHandle(env.ctx, 'unknown'), NotFoundError, /unknown/)
        await rejectsWith(ipsByHandle(env.ctx, 'unknown'), NotFoundError, /unknown/)
      })
    })

    s('a multi-address handle spanning a partially full block counts only what was allocated', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const [b0, b1] = walk('10.65.0.0/16', 26, 'host-a', 2) as [string, string]
      await assign4(env, 'host-a', 60, {handle: 'first'})
      const r = await assign4(env, 'host-a', 10, {handle: 'span'})
      assert.deepEqual(addrs(r), [...range(60, 64).map((o) => at(b0, o)), ...range(0, 6).map((o) => at(b1, o))])
      // Upstream increments by the requested count per block ({b0: 10, b1: 6}); ipamctl counts what it took.
      assert.deepEqual(await handleCounts(env.store, 'span'), {[b0]: 4, [b1]: 6})
      assert.equal((await releaseByHandle(env.ctx, 'span')).length, 10)
      assert.equal(await handleCounts(env.store, 'span'), undefined)
      assert.deepEqual(await handleCounts(env.store, 'first'), {[b0]: 60})
    })

    s('releaseByHandle racing a release and a re-assignment of the same handle keeps the handle exact', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const block = (await assign4(env, 'host-a', 1, {handle: 'h'})).ips[0]!.block
      // releaseByHandle has read the handle ({block: 1}); while it reads the block, another process
      // releases the handle's address and a retried ADD gives the same handle a new one in the same block.
      const racing = interceptGet(env.store, keys.block(parseCidr(block)), async (read) => {
        await releaseIps(env.ctx, [{ip: at(block, 0)}])
        const stale = await read()
        assert.deepEqual(addrs(await assign4(env, 'host-a', 1, {handle: 'h'})), [at(block, 1)])
        return stale
      })
      const released = await releaseByHandle(makeCtx(racing, {clock: env.clock}), 'h')
      // Either outcome is consistent: the new address released with the handle, or both kept.
      if (released.length === 0) assert.deepEqual(await handleCounts(env.store, 'h'), {[block]: 1})
      else assert.deepEqual(released, [at(block, 1)])
    })

    s('releasing several addresses in several blocks at once', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const r = await assign4(env, 'host-a', 66, {handle: 'h'})
      const pick = [r.ips[0]!.address, r.ips[63]!.address, r.ips[64]!.address, r.ips[0]!.address]
      const rel = await releaseIps(
        env.ctx,
        pick.map((ip) => ({ip, handle: 'h'})),
      )
      assert.deepEqual([...rel.released].sort(), [...new Set(pick)].sort())
      assert.deepEqual(rel.unallocated, [])
      assert.deepEqual(await handleCounts(env.store, 'h'), {[r.ips[0]!.block]: 62, [r.ips[64]!.block]: 1})
    })
  })

  describe(`${name}: cooldown`, () => {
    s('a released address cools down: status, stored record, handle and repeated release', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      await updateConfig(env.ctx, {ipCooldownSeconds: 60})
      const r = await assign4(env, 'host-a', 2, {handle: 'h'})
      const [ip0, ip1] = addrs(r) as [string, string]
      const block = r.ips[0]!.block
      env.clock.advance(5)
      assert.deepEqual(await releaseIps(env.ctx, [{ip: ip0}]), {released: [ip0], unallocated: []})
      const releasedAt = '2026-01-02T03:04:10Z'
      assert.deepEqual(await ipStatus(env.ctx, ip0), {state: 'cooldown', releasedAt})
      const raw = (await rawBlock(env.store, block))!
      assert.ok(
        raw.includes(`"attributes":[{"handle_id":"h","secondary":{"node":"host-a"}},{"releasedAt":"${releasedAt}"}]`),
        raw,
      )
      assert.ok(raw.includes(`"allocations":[1,0,null,`), raw)
      assert.ok(raw.includes(`"unallocated":[${range(2, 64).join(',')}]`), raw)
      assert.deepEqual(await handleCounts(env.store, 'h'), {[block]: 1})
      assert.deepEqual(await ipsByHandle(env.ctx, 'h'), [ip1])
      // Releasing it again is a no-op that reports it unallocated.
      await unchanged(env, async () => {
        assert.deepEqual(await releaseIps(env.ctx, [{ip: ip0}]), {released: [], unallocated: [ip0]})
      })
      // An address in cooldown cannot be assigned explicitly either.
      await rejectsWith(assignIp(env.ctx, {ip: ip0, host: 'host-a'}), ConflictError, /already assigned/)
    })

    s('a cooling address is skipped: the next request gets a different ordinal', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      await updateConfig(env.ctx, {ipCooldownSeconds: 60})
      const r = await assign4(env, 'host-a', 2, {handle: 'h'})
      const block = r.ips[0]!.block
      await releaseByHandle(env.ctx, 'h')
      assert.equal((await ipStatus(env.ctx, at(block, 0))).state, 'cooldown')
      assert.equal((await ipStatus(env.ctx, at(block, 1))).state, 'cooldown')
      assert.equal(await handleCounts(env.store, 'h'), undefined)
      assert.deepEqual(addrs(await assign4(env, 'host-a', 1)), [at(block, 2)])
    })

    s('a block that is full apart from cooling addresses makes the host claim a new block', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.61.0.0/28', blockSize: 29})
      await updateConfig(env.ctx, {ipCooldownSeconds: 60})
      const [b0, b1] = walk('10.61.0.0/28', 29, 'host-a', 2) as [string, string]
      assert.deepEqual(
        addrs(await assign4(env, 'host-a', 8)),
        range(0, 8).map((o) => at(b0, o)),
      )
      await releaseIps(env.ctx, [{ip: at(b0, 0)}])
      const r = await assign4(env, 'host-a', 1)
      assert.deepEqual(addrs(r), [at(b1, 0)])
      assert.equal((await ipStatus(env.ctx, at(b0, 0))).state, 'cooldown')
    })

    s('after the cooldown expires the address is free again and can be handed out', async (env) => {
      await pools(env, {name: 'one-block', cidr: '10.60.0.0/29', blockSize: 29})
      await updateConfig(env.ctx, {ipCooldownSeconds: 60})
      await assign4(env, 'host-a', 8)
      await releaseIps(env.ctx, [{ip: '10.60.0.3'}])
      env.clock.advance(59)
      const early = await assign4(env, 'host-a', 1)
      assert.deepEqual(early.ips, [])
      assert.deepEqual(early.messages, ['No IPs available in pools: [10.60.0.0/29]'])
      assert.equal((await ipStatus(env.ctx, '10.60.0.3')).state, 'cooldown')
      env.clock.advance(2)
      // Garbage collection happens on read: the status is free before anything is written.
      assert.deepEqual(await ipStatus(env.ctx, '10.60.0.3'), {state: 'free'})
      assert.ok((await rawBlock(env.store, '10.60.0.0/29'))!.includes('releasedAt'), 'reads must not write')
      assert.deepEqual(addrs(await assign4(env, 'host-a', 1, {handle: 'again'})), ['10.60.0.3'])
      const raw = (await rawBlock(env.store, '10.60.0.0/29'))!
      assert.ok(!raw.includes('releasedAt'), raw)
      assert.ok(raw.includes('"unallocated":[]'), raw)
    })
  })
}

// ================================================================================================

export function poolScenarios(name: string, open: StoreOpener): void {
  const s = (title: string, body: (env: Env) => Promise<void>, opts?: {todo?: string}) =>
    scenario(open, title, body, opts)

  describe(`${name}: pools`, () => {
    s("an overlapping pool is a ConflictError with upstream's message and nothing is written", async (env) => {
      await pools(env, {name: 'p1', cidr: '10.0.0.0/16'})
      await unchanged(env, async () => {
        await rejectsWith(
          createPools(env.ctx, [{name: 'p2', cidr: '10.0.5.0/24'}]),
          ConflictError,
          /^IPPool\(p2\) CIDR overlaps with IPPool\(p1\) CIDR 10\.0\.0\.0\/16$/,
        )
        await rejectsWith(
          createPools(env.ctx, [{name: 'p3', cidr: '10.0.0.0/8'}]),
          ConflictError,
          /^IPPool\(p3\) CIDR overlaps with IPPool\(p1\) CIDR 10\.0\.0\.0\/16$/,
        )
        await rejectsWith(createPools(env.ctx, [{name: 'p1', cidr: '10.9.0.0/16'}]), ConflictError, /already exists/)
      })
    })

    s('invalid pools are ValidationErrors and nothing is written', async (env) => {
      await unchanged(env, async () => {
        const bad = async (input: PoolInput, message: RegExp) =>
          rejectsWith(createPools(env.ctx, [input]), ValidationError, message)
        await bad({name: 'p', cidr: '10.0.0.1/24'}, /IPPool CIDR is not strictly masked/)
        await bad({name: 'p', cidr: '10.0.0.0/16', blockSize: 19}, /block size 19 is out of range/)
        await bad({name: 'p', cidr: '10.0.0.0/16', blockSize: 33}, /out of range/)
        await bad({name: 'p', cidr: 'fd00::/64', blockSize: 115}, /block size 115 is out of range/)
        await bad({name: 'p', cidr: '169.254.10.0/24'}, /link-local/)
        await bad({name: 'p', cidr: '169.0.0.0/8'}, /link-local/)
        await bad({name: 'p', cidr: 'fe80::/64'}, /link-local/)
        await bad({name: 'p', cidr: '10.0.0.0/28'}, /smaller than its block size/)
        await bad({name: 'P_bad', cidr: '10.0.0.0/16'}, /invalid pool name/)
      })
      assert.deepEqual(await listPools(env.ctx), [])
    })

    s('several pools in one call are created all or nothing', async (env) => {
      await unchanged(env, async () => {
        await rejectsWith(
          createPools(env.ctx, [
            {name: 'good', cidr: '10.1.0.0/16'},
            {name: 'bad', cidr: '10.2.0.0/16', blockSize: 40},
          ]),
          ValidationError,
          /out of range/,
        )
        await rejectsWith(
          createPools(env.ctx, [
            {name: 'one', cidr: '10.1.0.0/16'},
            {name: 'two', cidr: '10.1.128.0/17'},
          ]),
          ConflictError,
          /^IPPool\(two\) CIDR overlaps with IPPool\(one\) CIDR 10\.1\.0\.0\/16$/,
        )
      })
      const made = await createPools(env.ctx, [
        {name: 'one', cidr: '10.1.0.0/16'},
        {name: 'two', cidr: 'fd00::/48'},
      ])
      assert.deepEqual(
        made.map((p) => [p.name, p.spec.cidr, p.spec.blockSize]),
        [
          ['one', '10.1.0.0/16', 26],
          ['two', 'fd00::/48', 122],
        ],
      )
      assert.equal((await getPool(env.ctx, '10.1.0.0/16')).name, 'one')
      assert.equal((await getPool(env.ctx, 'two')).spec.cidr, 'fd00::/48')
      await rejectsWith(getPool(env.ctx, 'three'), NotFoundError, /three/)
    })
  })

  describe(`${name}: IPAM configuration`, () => {
    s('a missing configuration reads as the defaults without writing a key', async (env) => {
      await unchanged(env, async () => {
        assert.deepEqual(await loadConfig(env.ctx), {
          strictAffinity: false,
          autoAllocateBlocks: true,
          maxBlocksPerHost: 0,
          kubeVirtVMAddressPersistence: 'Enabled',
          ipCooldownSeconds: 0,
        })
      })
      assert.equal(await rawValue(env.store, keys.ipamConfig()), undefined)
    })

    s('invalid configurations are rejected and nothing is written', async (env) => {
      await unchanged(env, async () => {
        await rejectsWith(
          updateConfig(env.ctx, {strictAffinity: true, maxBlocksPerHost: -1}),
          ValidationError,
          /maxBlocksPerHost/,
        )
        await rejectsWith(updateConfig(env.ctx, {ipCooldownSeconds: 1201}), ValidationError, /ipCooldownSeconds/)
        await rejectsWith(updateConfig(env.ctx, {ipCooldownSeconds: -1}), ValidationError, /ipCooldownSeconds/)
        await rejectsWith(
          updateConfig(env.ctx, {strictAffinity: false, autoAllocateBlocks: false}),
          ValidationError,
          /Cannot disable 'StrictAffinity' and 'AutoAllocateBlocks' at the same time/,
        )
        await rejectsWith(
          updateConfig(env.ctx, {maxBlocksPerHost: 3}),
          ValidationError,
          /MaxBlocksPerHost requires StrictAffinity to be enabled/,
        )
      })
    })

    s(
      "a valid configuration is stored in upstream's omitempty form; an unchanged one is not rewritten",
      async (env) => {
        const cfg = await updateConfig(env.ctx, {strictAffinity: true, maxBlocksPerHost: 4, ipCooldownSeconds: 1200})
        assert.deepEqual(cfg, {
          strictAffinity: true,
          autoAllocateBlocks: true,
          maxBlocksPerHost: 4,
          kubeVirtVMAddressPersistence: 'Enabled',
          ipCooldownSeconds: 1200,
        })
        assert.equal(
          await rawValue(env.store, keys.ipamConfig()),
          '{"strict_affinity":true,"auto_allocate_blocks":true,"maxBlocksPerHost":4,"kubeVirtVMAddressPersistence":"Enabled","ipCooldownSeconds":1200}',
        )
        assert.deepEqual(await loadConfig(env.ctx), cfg)
        await unchanged(env, async () => {
          await updateConfig(env.ctx, {maxBlocksPerHost: 4})
        })
      },
    )
  })

  describe(`${name}: utilization`, () => {
    s('counts per pool and per block', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.70.0.0/24'}, {name: 'pool2', cidr: '10.71.0.0/24', blockSize: 29})
      const a = await assign4(env, 'host-a', 5, {pools4: ['pool1']})
      const b = await assign4(env, 'host-b', 3, {pools4: ['pool1']})
      const u = await utilization(env.ctx)
      assert.deepEqual(
        u.map((p) => [p.name, p.cidr, p.capacity, p.inUse, p.free]),
        [
          ['pool1', '10.70.0.0/24', 256n, 8n, 248n],
          ['pool2', '10.71.0.0/24', 256n, 0n, 256n],
        ],
      )
      const blocks = Object.fromEntries(u[0]!.blocks.map((x) => [x.cidr, [x.capacity, x.inUse, x.free]]))
      assert.deepEqual(blocks, {[a.ips[0]!.block]: [64n, 5n, 59n], [b.ips[0]!.block]: [64n, 3n, 61n]})
      assert.deepEqual(
        (await utilization(env.ctx, {pools: ['pool2']})).map((p) => p.name),
        ['pool2'],
      )
    })

    s('an IPv6 /64 pool counts exactly: capacity 2^64, free 2^64 - in use', async (env) => {
      await pools(env, {name: 'pool6', cidr: 'fd80:24e2:f998:72d6::/64'})
      await autoAssign(env.ctx, {host: 'host-a', num4: 0, num6: 3})
      const [u] = await utilization(env.ctx)
      assert.equal(u!.capacity, 2n ** 64n)
      assert.equal(u!.inUse, 3n)
      assert.equal(u!.free, 2n ** 64n - 3n)
      assert.deepEqual(
        u!.blocks.map((x) => [x.capacity, x.inUse, x.free]),
        [[64n, 3n, 61n]],
      )
    })

    s('blocks left behind by a deleted pool are reported as orphaned', async (env) => {
      await pools(env, {name: 'gone', cidr: '10.72.0.0/24'}, {name: 'kept', cidr: '10.73.0.0/24'})
      const r = await assign4(env, 'host-a', 2, {pools4: ['gone'], handle: 'h'})
      await deletePool(env.ctx, 'gone', {graceMs: 0})
      const u = await utilization(env.ctx)
      assert.deepEqual(
        u.map((p) => p.name),
        ['kept', ORPHANED],
      )
      const orphan = u[1]!
      assert.deepEqual([orphan.capacity, orphan.inUse, orphan.free], [64n, 2n, 62n])
      assert.deepEqual(
        orphan.blocks.map((x) => x.cidr),
        [r.ips[0]!.block],
      )
    })
  })

  describe(`${name}: block affinity`, () => {
    s('releasing the affinity of a non-empty block leaves a non-affine block', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const r = await assign4(env, 'host-a', 2, {handle: 'h'})
      const block = r.ips[0]!.block
      assert.equal(await releaseBlockAffinity(env.ctx, 'host-a', parseCidr(block), {requireEmpty: false}), 'released')
      const raw = (await rawBlock(env.store, block))!
      assert.ok(raw.startsWith(`{"cidr":"${block}","affinity":null,"allocations":[`), raw)
      assert.equal(await affinityState(env.store, 'host-a', block), undefined)
      for (const ip of addrs(r)) assert.equal((await ipStatus(env.ctx, ip)).state, 'assigned')
      // The host now claims a fresh block instead of using the released one.
      const next = await assign4(env, 'host-a', 1)
      assert.notEqual(next.ips[0]!.block, block)
      assert.equal(await releaseBlockAffinity(env.ctx, 'host-a', parseCidr(block), {requireEmpty: false}), 'absent')
    })

    s('releasing the affinity of an empty block deletes the block and the affinity', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const block = (await assign4(env, 'host-a', 1, {handle: 'h'})).ips[0]!.block
      await releaseByHandle(env.ctx, 'h')
      assert.equal(
        await releaseBlockAffinity(env.ctx, 'host-a', parseCidr(block), {requireEmpty: true}),
        'deleted-block',
      )
      assert.equal(await rawBlock(env.store, block), undefined)
      assert.deepEqual(await affinityList(env.store), [])
    })

    s('requireEmpty on a non-empty block is a ConflictError and changes nothing', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const block = (await assign4(env, 'host-a', 1, {handle: 'h'})).ips[0]!.block
      await unchanged(env, async () => {
        await rejectsWith(
          releaseBlockAffinity(env.ctx, 'host-a', parseCidr(block), {requireEmpty: true}),
          ConflictError,
          /is not empty/,
        )
      })
    })

    s('releasing an affinity whose block is missing removes the affinity (upstream leaves it behind)', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      await seed(env.store, keys.affinity('host-a', parseCidr('10.65.7.0/26')), CONFIRMED)
      assert.equal(
        await releaseBlockAffinity(env.ctx, 'host-a', parseCidr('10.65.7.0/26'), {requireEmpty: true}),
        'stale',
      )
      assert.deepEqual(await affinityList(env.store), [])
    })

    s('an address in a disabled pool still shows its owner and can be released', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const ip = (await assign4(env, 'host-a', 1, {handle: 'h', attrs: {pod: 'web-0', namespace: 'default'}})).ips[0]!
        .address
      const p = (await getPool(env.ctx, 'pool1'))!
      await seed(env.store, keys.pool('pool1'), encodePool({...p, spec: {...p.spec, disabled: true}}))
      const st = await ipStatus(env.ctx, ip)
      assert.equal(st.state, 'assigned')
      assert.deepEqual(st.state === 'assigned' && st.owner.attrs, {namespace: 'default', node: 'host-a', pod: 'web-0'})
      await rejectsWith(assign4(env, 'host-a', 1), NotFoundError, /no configured Calico pools/)
      assert.deepEqual(await releaseIps(env.ctx, [{ip, handle: 'h'}]), {released: [ip], unallocated: []})
    })

    s('deleting a pool releases its affinities and keeps allocated addresses', async (env) => {
      await pools(env, {name: 'doomed', cidr: '10.74.0.0/24'}, {name: 'other', cidr: '10.75.0.0/24'})
      const a = await assign4(env, 'host-a', 2, {handle: 'ha', pools4: ['doomed']})
      const b = await assign4(env, 'host-b', 1, {handle: 'hb', pools4: ['doomed']})
      const c = await assign4(env, 'host-c', 1, {handle: 'hc', pools4: ['other']})
      await releaseByHandle(env.ctx, 'hb') // host-b's block is now empty but still affine
      const {affinitiesReleased} = await deletePool(env.ctx, 'doomed', {graceMs: 0})
      assert.equal(affinitiesReleased, 2)
      await rejectsWith(getPool(env.ctx, 'doomed'), NotFoundError, /doomed/)
      assert.deepEqual(await affinityList(env.store), [`host-c ${c.ips[0]!.block}`])
      assert.equal(await rawBlock(env.store, b.ips[0]!.block), undefined, 'an empty block goes with its affinity')
      const aBlock = a.ips[0]!.block
      assert.equal((await storedBlock(env.store, aBlock))!.affinity, null)
      for (const ip of addrs(a)) {
        const st = await ipStatus(env.ctx, ip)
        assert.equal(st.state, 'assigned')
        assert.equal(st.state === 'assigned' && st.owner.handle, 'ha')
      }
      await releaseIps(env.ctx, [{ip: a.ips[0]!.address}])
      assert.ok(await rawBlock(env.store, aBlock))
      await releaseIps(env.ctx, [{ip: a.ips[1]!.address}])
      assert.equal(await rawBlock(env.store, aBlock), undefined, 'the last release deletes the non-affine block')
      assert.equal(await handleCounts(env.store, 'ha'), undefined)
    })
  })

  describe(`${name}: reclaim and recovery`, () => {
    s('strict affinity: another host takes over an empty block only once its claim is a minute old', async (env) => {
      await pools(env, {name: 'tiny', cidr: '10.80.0.0/28', blockSize: 29})
      await updateConfig(env.ctx, {strictAffinity: true})
      const a = await assign4(env, 'host-a', 16, {handle: 'a'})
      const aBlocks = [...new Set(a.ips.map((i) => i.block))].sort()
      assert.equal(aBlocks.length, 2)
      await releaseByHandle(env.ctx, 'a')
      for (const b of aBlocks) assert.equal((await storedBlock(env.store, b))!.affinity, 'host:host-a')
      env.clock.advance(59)
      const early = await assign4(env, 'host-b', 1, {handle: 'b'})
      assert.deepEqual(early.ips, [])
      assert.deepEqual(early.messages, ['No more free affine blocks and strict affinity enabled'])
      env.clock.advance(61)
      const late = await assign4(env, 'host-b', 1, {handle: 'b'})
      assert.equal(late.ips.length, 1)
      const taken = late.ips[0]!.block
      assert.equal(late.ips[0]!.address, at(taken, 0))
      const blk = (await storedBlock(env.store, taken))!
      assert.equal(blk.affinity, 'host:host-b')
      assert.equal(blk.affinityClaimTime, '2026-01-02T03:06:05Z')
      assert.deepEqual(
        await affinityList(env.store),
        [...aBlocks.filter((x) => x !== taken).map((x) => `host-a ${x}`), `host-b ${taken}`].sort(),
      )
    })

    s('without strict affinity a young empty block is borrowed from, an old one is taken over', async (env) => {
      await pools(env, {name: 'tiny', cidr: '10.80.0.0/28', blockSize: 29})
      const a = await assign4(env, 'host-a', 16, {handle: 'a'})
      await releaseByHandle(env.ctx, 'a')
      env.clock.advance(30)
      const early = await assign4(env, 'host-b', 1, {handle: 'b1'})
      const lent = early.ips[0]!.block
      assert.equal((await storedBlock(env.store, lent))!.affinity, 'host:host-a', 'a young block is only borrowed from')
      env.clock.advance(90)
      const late = await assign4(env, 'host-b', 1, {handle: 'b2'})
      const taken = late.ips[0]!.block
      assert.notEqual(taken, lent, 'the block with the borrowed address is not empty')
      assert.equal((await storedBlock(env.store, taken))!.affinity, 'host:host-b')
      assert.equal(await affinityState(env.store, 'host-a', taken), undefined)
      assert.equal(await affinityState(env.store, 'host-b', taken), 'confirmed')
      assert.equal(a.ips.length, 16)
    })

    s("a stale affinity pointing at another host's block is cleaned up and not used", async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16'})
      const block = (await assign4(env, 'host-a', 1)).ips[0]!.block
      await seed(env.store, keys.affinity('host-b', parseCidr(block)), CONFIRMED)
      const r = await assign4(env, 'host-b', 1, {handle: 'b'})
      assert.notEqual(r.ips[0]!.block, block)
      assert.equal(await affinityState(env.store, 'host-b', block), undefined)
      assert.equal((await storedBlock(env.store, block))!.allocations.filter((x) => x !== null).length, 1)
    })

    s('a pending affinity left by a crashed claim is completed on the next request', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.90.0.0/16'})
      await seed(env.store, keys.affinity('host-a', parseCidr('10.90.5.0/26')), '{"state":"pending","deleted":false}')
      const r = await assign4(env, 'host-a', 1, {handle: 'h'})
      assert.deepEqual(r.ips, [{address: '10.90.5.0', family: 4, cidr: '10.90.5.0/26', block: '10.90.5.0/26'}])
      assert.equal(await rawValue(env.store, keys.affinity('host-a', parseCidr('10.90.5.0/26'))), CONFIRMED)
      const b = (await storedBlock(env.store, '10.90.5.0/26'))!
      assert.equal(b.affinity, 'host:host-a')
      assert.equal(b.affinityClaimTime, T0)
      assert.deepEqual(await handleCounts(env.store, 'h'), {'10.90.5.0/26': 1})
    })

    s(
      'an upstream block with a sequence number above 2^53 and a legacy hostAffinity field is updated losslessly',
      async (env) => {
        await pools(env, {name: 'pool1', cidr: '10.65.0.0/16', blockSize: 29})
        const nulls = 'null,null,null,null,null,null,null,null'
        await seed(
          env.store,
          '/calico/ipam/v2/assignment/ipv4/block/10.65.0.0-29',
          `{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[${nulls}],` +
            `"unallocated":[0,1,2,3,4,5,6,7],"attributes":null,"sequenceNumber":1767323045000000000,"sequenceNumberForAllocation":{},"deleted":false,"hostAffinity":"node-1"}`,
        )
        await seed(env.store, '/calico/ipam/v2/host/node-1/ipv4/block/10.65.0.0-29', CONFIRMED)
        const r = await assign4(env, 'node-1', 1, {handle: 'k8s-pod-network.0123456789abcdef'})
        assert.deepEqual(addrs(r), ['10.65.0.0'])
        assert.equal(
          await rawBlock(env.store, '10.65.0.0/29'),
          '{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,null,null,null,null,null,null,null],' +
            '"unallocated":[1,2,3,4,5,6,7],"attributes":[{"handle_id":"k8s-pod-network.0123456789abcdef","secondary":{"node":"node-1"}}],' +
            '"sequenceNumber":1767323045000000001,"sequenceNumberForAllocation":{"0":1767323045000000000},"deleted":false}',
        )
        const st = await ipStatus(env.ctx, '10.65.0.0')
        assert.equal(st.state === 'assigned' && st.owner.sequenceNumber, 1767323045000000000n)
        assert.deepEqual(await releaseIps(env.ctx, [{ip: '10.65.0.0', sequenceNumber: 1767323045000000000n}]), {
          released: ['10.65.0.0'],
          unallocated: [],
        })
        assert.ok((await rawBlock(env.store, '10.65.0.0/29'))!.includes('"sequenceNumber":1767323045000000002,'))
      },
    )

    s('a very old block with only a hostAffinity field is read as affine to that host', async (env) => {
      await pools(env, {name: 'pool1', cidr: '10.65.0.0/16', blockSize: 29})
      await seed(
        env.store,
        '/calico/ipam/v2/assignment/ipv4/block/10.65.0.8-29',
        '{"cidr":"10.65.0.8/29","hostAffinity":"node-1","allocations":[0,null,null,null,null,null,null,null],"unallocated":[1,2,3,4,5,6,7],' +
          '"attributes":[{"handle_id":"old","secondary":{"node":"node-1"}}],"sequenceNumber":9007199254740993,"sequenceNumberForAllocation":{"0":9007199254740992}}',
      )
      await seed(env.store, '/calico/ipam/v2/host/node-1/ipv4/block/10.65.0.8-29', '')
      await seed(env.store, keys.handle('old'), '{"block":{"10.65.0.8/29":1},"deleted":false}')
      const r = await assign4(env, 'node-1', 1)
      assert.deepEqual(addrs(r), ['10.65.0.9'])
      const raw = (await rawBlock(env.store, '10.65.0.8/29'))!
      assert.ok(raw.startsWith('{"cidr":"10.65.0.8/29","affinity":"host:node-1","allocations":[0,1,null,'), raw)
      assert.ok(
        raw.includes(
          '"sequenceNumber":9007199254740994,"sequenceNumberForAllocation":{"0":9007199254740992,"1":9007199254740993},"deleted":false}',
        ),
        raw,
      )
      assert.ok(!raw.includes('hostAffinity'), raw)
    })
  })
}

/** Every allocator scenario, for one store backend. */
export function allocatorScenarios(name: string, open: StoreOpener): void {
  autoAssignScenarios(name, open)
  releaseScenarios(name, open)
  poolScenarios(name, open)
}
