// ipam check (docs/calico.md#ipam-check) on every embedded store backend: leaks, owners, handles, invalid blocks, the
// ipamctl affinity extras, and the JSON report's fields and omitempty rules.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {canonicalV4, CLUSTER_INFO_KEY, checkIpam} from '../../../src/lib/ipam/check.ts'
import {buildReport, reportJson} from '../../../src/lib/ipam/check-report.ts'
import type {Ctx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {writeReport} from '../../../src/lib/ipam/report-file.ts'
import {goTimeString} from '../../../src/lib/codec/gotime.ts'
import {formatIp, parseCidr, tryParseIp} from '../../../src/lib/net/cidr.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {freshCtx, openMemory, seed, type StoreOpener, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-check-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

async function allocate(ctx: Ctx, handle: string, pod: string, node = 'node-1'): Promise<string> {
  const r = await autoAssign(ctx, {
    host: node,
    num4: 1,
    num6: 0,
    handle,
    attrs: {node, pod, namespace: 'default', timestamp: goTimeString(ctx.clock.now())},
  })
  return r.v4.ips[0]!.address
}

async function writeWep(ctx: Ctx, pod: string, ip: string, node = 'node-1'): Promise<string> {
  const w = newWorkloadEndpoint(
    {
      name: `${node}-k8s-${pod}-eth0`,
      namespace: 'default',
      orchestrator: 'k8s',
      node,
      containerID: `cid-${pod}`,
      pod,
      endpoint: 'eth0',
      ipNetworks: [`${ip}/32`],
      interfaceName: `cali-${pod}`,
    },
    ctx.clock.now(),
  )
  await seed(ctx.store, endpointKey('default', w.name), encodeWorkloadEndpoint(w))
  return `Workload(default/${w.name})`
}

async function setup(open: StoreOpener) {
  const env = await freshCtx({open})
  await createPools(env.ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
  return env
}

for (const [name, open] of [
  ['memory', openMemory],
  ['sqlite', sqlite.open],
] as const) {
  describe(`checkIpam (${name})`, () => {
    it('finds a leaked allocation and tells it from one a workload endpoint uses', async () => {
      const {ctx} = await setup(open)
      const leak = await allocate(ctx, 'h-leak', 'leak')
      const live = await allocate(ctx, 'h-live', 'live')
      const owner = await writeWep(ctx, 'live', live)
      const r = await checkIpam(ctx)
      assert.deepEqual(
        r.leaked.map((a) => [a.ip, a.handle]),
        [[leak, 'h-leak']],
      )
      const l = r.allocations.find((a) => a.ip === live)!
      assert.equal(l.inUse, true)
      assert.deepEqual(l.owners, [owner])
      assert.deepEqual(
        [r.leakedHandles, r.missingHandles, r.invalidBlocks, r.noAllocation, r.notInActivePool],
        [[], [], [], [], []],
      )
      assert.deepEqual(r.nodeAllocations, [{node: 'node-1', count: 2}])
      assert.equal(r.problems, 1)
    })

    it('a workload address without an allocation, or outside every active pool, is an in-use problem', async () => {
      const {ctx} = await setup(open)
      await writeWep(ctx, 'ghost', '10.65.3.3')
      await writeWep(ctx, 'outside', '192.168.1.1')
      const r = await checkIpam(ctx)
      assert.deepEqual(
        r.noAllocation.map((x) => x.ip),
        ['10.65.3.3'],
      )
      assert.deepEqual(
        r.notInActivePool.map((x) => x.ip),
        ['192.168.1.1'],
      )
      assert.equal(r.problems, 2)
    })

    // ' 10.65.7.7/32' is unparseable, as for Calico (Go's net.ParseCIDR) and for every other address ipamctl reads.
    it('endpoint addresses in any written form are normalized, matched to active pools, unparseable ones skipped', async () => {
      const {ctx, store} = await setup(open)
      await createPools(ctx, [
        {name: 'p6', cidr: 'fd00:65::/120'},
        {name: 'off', cidr: '10.66.0.0/16', disabled: true},
      ])
      const live = await allocate(ctx, 'h-live', 'live')
      const w = newWorkloadEndpoint(
        {
          name: 'node-1-k8s-forms-eth0',
          namespace: 'default',
          orchestrator: 'k8s',
          node: 'node-1',
          containerID: 'c-forms',
          pod: 'forms',
          endpoint: 'eth0',
          ipNetworks: [
            ' 10.65.7.7/32',
            '10.65.7.8',
            'fd00:65::0007/128',
            '010.65.7.9/32',
            '10.65.7.256/32',
            '192.168.1.1/32',
            '10.66.0.1/32',
            `${live}/32`,
            `${live}/32`,
          ],
          interfaceName: 'cali-forms',
        },
        ctx.clock.now(),
      )
      await seed(store, endpointKey('default', w.name), encodeWorkloadEndpoint(w))
      const other = await writeWep(ctx, 'other', live)
      const r = await checkIpam(ctx)
      const me = `Workload(default/${w.name})`
      assert.deepEqual(
        [...r.owners],
        [
          ['10.65.7.8', [me]],
          ['fd00:65::7', [me]],
          ['192.168.1.1', [me]],
          ['10.66.0.1', [me]],
          [live, [me, me, other]],
        ],
      )
      assert.equal(r.workloadIps, 7)
      assert.deepEqual(r.multipleOwners, [live])
      assert.deepEqual(
        r.noAllocation.map((x) => x.ip),
        ['10.65.7.8', 'fd00:65::7'],
      )
      assert.deepEqual(r.notInActivePool, [
        {ip: '192.168.1.1', owner: me},
        {ip: '10.66.0.1', owner: me},
      ])
      assert.deepEqual(r.leaked, [])
      assert.equal(r.allocations.find((a) => a.ip === live)!.inUse, true)
    })

    it('leaked handle (with its revision) and missing handle', async () => {
      const {ctx, store} = await setup(open)
      await allocate(ctx, 'h-a', 'a')
      await seed(store, keys.handle('orphan'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
      const orphan = await store.get(keys.handle('orphan'))
      const ha = await store.get(keys.handle('h-a'))
      assert.ok((await store.txn([{key: ha!.key, modRevision: ha!.modRevision}], [{delete: ha!.key}])).succeeded)
      const r = await checkIpam(ctx)
      assert.deepEqual(r.leakedHandles, [{id: 'orphan', revision: orphan!.modRevision}])
      assert.deepEqual(r.missingHandles, ['h-a'])
      assert.equal(r.handlesWithMatches, 0)
      // One leaked address (no endpoint) + one leaked handle; missing handles are not counted, as upstream.
      assert.equal(r.problems, 2)
    })

    it('a corrupted block is invalid with the exact reasons', async () => {
      const {ctx, store} = await setup(open)
      await seed(
        store,
        keys.block(parseCidr('10.65.9.0/30')),
        '{"cidr":"10.65.9.0/30","affinity":null,"allocations":[0,null,null,3],"unallocated":[0,1,2,2,7],"attributes":[{"handle_id":"h"},{"handle_id":"unused"}],"sequenceNumber":1,"sequenceNumberForAllocation":{},"deleted":false}',
      )
      const r = await checkIpam(ctx)
      assert.deepEqual(r.invalidBlocks, [
        {
          cidr: '10.65.9.0/30',
          reasons: [
            'allocation 3 indexes a nonexistent attribute 3',
            'attribute index 1 exists but is not indexed by an allocation',
            'ordinal 0 is allocated but appears in Unallocated',
            'ordinal 2 appears more than once in Unallocated array',
            'ordinal 7 appears in the Unallocated array but is out of the block',
            'expected 4 addresses in this block, but Unallocated (5) + Allocated (2) = 7',
          ],
        },
      ])
    })

    it('ipamctl extras: an affinity without a block, a host-affine block without its affinity', async () => {
      const {ctx, store} = await setup(open)
      await seed(store, keys.affinity('node-9', parseCidr('10.65.200.0/26')), '{"state":"confirmed","deleted":false}')
      await allocate(ctx, 'h-b', 'b', 'node-2')
      const [aff] = await store.listKeys(keys.hostAffinityPrefix('node-2', 4))
      const kv = await store.get(aff!)
      assert.ok((await store.txn([{key: kv!.key, modRevision: kv!.modRevision}], [{delete: kv!.key}])).succeeded)
      const r = await checkIpam(ctx)
      assert.deepEqual(r.affinitiesWithoutBlock, [{host: 'node-9', cidr: '10.65.200.0/26', state: 'confirmed'}])
      assert.equal(r.blocksWithoutAffinity.length, 1)
      assert.equal(r.blocksWithoutAffinity[0]!.host, 'node-2')
      assert.equal(r.problems, 3) // the two extras + the leaked address of h-b
    })

    it('report: cluster fields, exact sequence numbers, omitempty, mode 0600', async () => {
      const {ctx, store} = await setup(open)
      let rep = buildReport(await checkIpam(ctx))
      assert.deepEqual(
        [rep.clusterGUID, rep.datastoreLocked, rep.clusterInformationRevision, rep.clusterType],
        ['', false, '', ''],
      )
      await seed(
        store,
        CLUSTER_INFO_KEY,
        '{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"clusterGUID":"abc123","clusterType":"ipamctl","datastoreReady":false}}',
      )
      const ci = await store.get(CLUSTER_INFO_KEY)
      const leak = await allocate(ctx, 'h-leak', 'leak')
      const live = await allocate(ctx, 'h-live', 'live', 'node-2')
      const owner = await writeWep(ctx, 'live', live, 'node-2')
      await seed(store, keys.handle('orphan'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
      const orphanRev = (await store.get(keys.handle('orphan')))!.modRevision
      const result = await checkIpam(ctx)
      rep = buildReport(result)
      const text = reportJson(rep)
      const json = JSON.parse(text)
      assert.equal(
        json.version,
        JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version,
      )
      assert.deepEqual(
        [json.clusterGUID, json.datastoreLocked, json.clusterInformationRevision, json.clusterType],
        ['abc123', true, String(ci!.modRevision), 'ipamctl'],
      )
      assert.deepEqual(json.leakedHandles, [{ID: 'orphan', UID: null, Revision: String(orphanRev)}])
      const seq = result.allocations.find((a) => a.ip === leak)!.sequenceNumber!
      assert.ok(seq > BigInt(Number.MAX_SAFE_INTEGER))
      assert.ok(text.includes(`"sequenceNumber": ${seq}`), 'sequence number written exactly')
      const e = json.allocations[leak][0]
      assert.deepEqual(Object.keys(e), [
        'ip',
        'handle',
        'sequenceNumber',
        'pod',
        'namespace',
        'node',
        'creationTimestamp',
        'inUse',
        'owners',
      ])
      assert.deepEqual(
        [e.handle, e.pod, e.namespace, e.node, e.inUse, e.owners],
        ['h-leak', 'leak', 'default', 'node-1', false, null],
      )
      assert.match(e.creationTimestamp, / \+0000 UTC$/)
      assert.deepEqual(json.allocations[live][0].owners, [owner])
      assert.equal(json.allocations[live][0].inUse, true)
      assert.ok(text.startsWith('{\n  "version"'), '2-space indentation')
      const file = path.join(tmp, `report-${name}.json`)
      // An earlier report (0644) is replaced and tightened; any other file is refused.
      fs.writeFileSync(file, '{\n  "version": "0.0.1",\n  "clusterGUID": "",\n  "allocations": {}\n}\n', {mode: 0o644})
      writeReport(file, rep)
      assert.equal(fs.statSync(file).mode & 0o777, 0o600)
      assert.equal(fs.readFileSync(file, 'utf8'), text)
      const other = path.join(tmp, `notes-${name}.txt`)
      fs.writeFileSync(other, 'old')
      assert.throws(() => writeReport(other, rep), /exists and is not an ipam check report; refusing to overwrite it/)
      assert.equal(fs.readFileSync(other, 'utf8'), 'old')
      // No leaked handles → the key is left out.
      const clean = await setup(open)
      assert.equal('leakedHandles' in JSON.parse(reportJson(buildReport(await checkIpam(clean.ctx)))), false)
    })

    it('records that the lean readers decline (escapes, whitespace) are read in full with the same result', async () => {
      const {ctx, store} = await setup(open)
      const leak = await allocate(ctx, 'h-leak', 'leak')
      const live = await allocate(ctx, 'h-live', 'live')
      const twice = await allocate(ctx, 'h-twice', 'twice')
      const owner = await writeWep(ctx, 'live', live)
      const twiceOwner = await writeWep(ctx, 'twice', twice)
      const summary = (r: Awaited<ReturnType<typeof checkIpam>>) => ({
        allocations: r.allocations.map((a) => ({...a})),
        owners: [...r.owners],
        leaked: r.leaked.map((a) => a.ip),
        counts: [r.allocationCount, r.ownedIps, r.workloadIps, r.problems],
        nodeAllocations: r.nodeAllocations,
        multipleOwners: r.multipleOwners,
        invalidBlocks: r.invalidBlocks,
      })
      const plain = summary(await checkIpam(ctx))
      // The same records as another writer might store them: an escaped name, whitespace, members reordered.
      const [wkey] = await store.listKeys(endpointKey('default', 'node-1-k8s-live'))
      const w = JSON.parse((await store.get(wkey!))!.value) as {metadata: {name: string}; spec: object}
      const escaped = JSON.stringify({spec: w.spec, metadata: w.metadata}, null, 2).replace(
        `"name": "${w.metadata.name}"`,
        `"name": "${w.metadata.name.replace(/-/g, '\\u002d')}"`,
      )
      assert.ok(escaped.includes('\\u002d'))
      await seed(store, wkey!, escaped)
      const [bkey] = await store.listKeys(keys.blockPrefix(4))
      const spaced = (await store.get(bkey!))!.value.replace(',"attributes":', ',\n  "attributes": ')
      assert.ok(spaced.includes('\n'))
      await seed(store, bkey!, spaced)
      const r = await checkIpam(ctx)
      assert.deepEqual(summary(r), plain)
      assert.deepEqual(
        r.leaked.map((a) => a.ip),
        [leak],
      )
      assert.deepEqual(r.owners.get(live), [owner])
      assert.deepEqual(r.owners.get(twice), [twiceOwner])
      assert.equal(r.allocations.find((a) => a.ip === live)!.owners[0], owner)
    })

    it('borrowed and cooling-down allocations are marked; cooling down is not a leak', async () => {
      const {ctx, store} = await setup(open)
      const ip = await allocate(ctx, 'h-x', 'x', 'node-1')
      // Re-label the allocation as node-2's: borrowed from node-1's block.
      const [bkey] = await store.listKeys(keys.blockPrefix(4))
      const b = await store.get(bkey!)
      await seed(store, bkey!, b!.value.replace('"node":"node-1"', '"node":"node-2"'))
      let r = await checkIpam(ctx)
      assert.equal(r.allocations[0]!.borrowed, true)
      assert.equal(JSON.parse(reportJson(buildReport(r))).allocations[ip][0].borrowed, true)
      const cooled = (await store.get(bkey!))!.value.replace(
        /"attributes":\[[^\]]*\]/,
        `"attributes":[{"releasedAt":"${new Date(ctx.clock.now().getTime() - 1000).toISOString().replace(/\.\d+Z$/, 'Z')}"}]`,
      )
      await seed(store, bkey!, cooled)
      r = await checkIpam(ctx)
      assert.equal(r.allocations[0]!.coolingDown, true)
      assert.deepEqual(r.leaked, [])
    })
  })
}

describe('canonicalV4', () => {
  it('accepts exactly the IPv4 texts formatIp writes, with their value', () => {
    const samples = [
      '0.0.0.0',
      '255.255.255.255',
      '10.65.0.5',
      '1.2.3.4',
      '192.168.100.200',
      '10.0.0.256',
      '10.0.0.01',
      '010.0.0.1',
      '00.0.0.0',
      ' 10.0.0.1',
      '10.0.0.1 ',
      '10.0.0',
      '10.0.0.1.2',
      '10..0.1',
      '.10.0.0.1',
      '10.0.0.1.',
      '',
      '1e1.0.0.0',
      '+1.0.0.0',
      '-1.0.0.0',
      '::1',
      '::ffff:10.0.0.1',
      '１.2.3.4',
      '999.0.0.0',
      '4294967296',
      '10.0.0.1/32',
    ]
    // And a spread of random dotted quads, some with leading zeros or out-of-range octets.
    let x = 12345
    const rnd = (n: number) => {
      x = (x * 1103515245 + 12345) % 2 ** 31
      return x % n
    }
    for (let i = 0; i < 2000; i++)
      samples.push(Array.from({length: 4}, () => (rnd(10) === 0 ? `0${rnd(300)}` : String(rnd(300)))).join('.'))
    for (const s of samples) {
      const ip = tryParseIp(s)
      const canonical = ip?.family === 4 && formatIp(4, ip.value) === s
      assert.equal(canonicalV4(s), canonical ? Number(ip.value) : -1, s)
      // Up to an end: the address part of an ipNetworks entry, read without cutting it out.
      assert.equal(canonicalV4(`${s}/32`, s.length), canonical ? Number(ip.value) : -1, s)
    }
  })
})
