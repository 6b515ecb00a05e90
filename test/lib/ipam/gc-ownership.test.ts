// GC ownership on every embedded store backend: ipam check counts the tunnel addresses of Node records as in
// use, and gc releases only workload allocations (isWorkloadAllocation); every other leak is planned as
// "not a workload allocation" and left alone, while genuine workload leaks still go.
import assert from 'node:assert/strict'
import {after, describe, it} from 'node:test'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {checkIpam} from '../../../src/lib/ipam/check.ts'
import type {Ctx} from '../../../src/lib/ipam/context.ts'
import {planGc, runGc} from '../../../src/lib/ipam/gc.ts'
import {NETNS_ATTRIBUTE} from '../../../src/lib/ipam/ownership.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {assertInvariants, freshCtx, openMemory, seed, type StoreOpener, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

/** A Node record as Calico's node agent writes it on a shared datastore, naming tunnel addresses. */
const calicoNode = (name: string, spec: Record<string, unknown>) =>
  JSON.stringify({
    kind: 'Node',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name, uid: `uid-${name}`, creationTimestamp: '2026-01-02T03:04:05Z'},
    spec,
  })

const assign = (ctx: Ctx, ip: string, handle: string, attrs: Record<string, string>) =>
  assignIp(ctx, {ip, host: attrs.node ?? 'node-1', handle, attrs})

/** One of each kind of leak, none listed by a workload endpoint; returns what is expected of each. */
async function populate(ctx: Ctx) {
  await createPools(ctx, [
    {name: 'p4', cidr: '10.65.0.0/16'},
    {name: 'p6', cidr: 'fd00:65::/64'},
  ])
  // Manual assignments (ipam assign): no attributes of a workload, or no CNI handle.
  await assign(ctx, '10.65.0.10', 'gateway', {node: 'node-1'})
  await assign(ctx, '10.65.0.11', 'vip.frontend', {node: 'node-1', role: 'vip'})
  await assign(ctx, '10.65.0.12', 'gateway-2', {node: 'node-1', namespace: 'default', pod: 'web-0'})
  // Tunnel addresses as Calico allocates them, named by the Node record (and one by no record at all).
  await assign(ctx, '10.65.0.20', 'ipip-tunnel-addr-node-1', {node: 'node-1', type: 'ipipTunnelAddress'})
  await assign(ctx, '10.65.0.21', 'wireguard-tunnel-addr-node-1', {node: 'node-1', type: 'wireguardTunnelAddress'})
  await assign(ctx, 'fd00:65::22', 'vxlan-v6-tunnel-addr-node-1', {node: 'node-1', type: 'vxlanV6TunnelAddress'})
  await assign(ctx, '10.65.0.23', 'vxlan-tunnel-addr-gone.example.org', {
    node: 'gone.example.org',
    type: 'vxlanTunnelAddress',
  })
  await seed(
    ctx.store,
    keys.node('node-1'),
    calicoNode('node-1', {
      bgp: {ipv4Address: '192.168.0.1/24', ipv4IPIPTunnelAddr: '10.65.0.20'},
      wireguard: {interfaceIPv4Address: '10.65.0.21'},
      ipv6VXLANTunnelAddr: 'fd00:65::22',
    }),
  )
  // Genuine workload leaks, as the plugins write them.
  await assign(ctx, '10.65.0.30', 'k8s-pod-network.c0ffee', {node: 'node-1', namespace: 'default', pod: 'web-0'})
  await assign(ctx, '10.65.0.31', 'k8s-pod-network.beef', {node: 'node-1', [NETNS_ATTRIBUTE]: '/var/run/netns/demo'})
  return {
    tunnels: ['10.65.0.20', '10.65.0.21', 'fd00:65::22'],
    notWorkload: ['10.65.0.10', '10.65.0.11', '10.65.0.12', '10.65.0.23'],
    workload: ['10.65.0.30', '10.65.0.31'],
  }
}

const sorted = (xs: string[]) => [...xs].sort()

/** gc run on node-1, where no network namespace exists any more. */
const gone = {node: 'node-1', exists: () => false}

for (const [name, open] of [
  ['memory', openMemory],
  ['sqlite', sqlite.open],
] as const) {
  describe(`gc ownership (${name})`, () => {
    it('ipam check counts the tunnel addresses a Node record names as in use by that node', async () => {
      const {ctx} = await freshCtx({open: open as StoreOpener})
      const want = await populate(ctx)
      const r = await checkIpam(ctx)
      assert.equal(r.nodeTunnelIps, 3)
      for (const ip of want.tunnels) {
        assert.deepEqual(r.owners.get(ip), ['Node(node-1)'], ip)
        assert.equal(r.allocations.find((a) => a.ip === ip)?.inUse, true, ip)
      }
      assert.deepEqual(sorted(r.leaked.map((a) => a.ip)), sorted([...want.notWorkload, ...want.workload]))
      assert.deepEqual([r.noAllocation, r.notInActivePool], [[], []])
    })

    it('gc releases the workload leaks only; the others are planned as not workload allocations and survive', async () => {
      const {ctx, clock} = await freshCtx({open: open as StoreOpener})
      const want = await populate(ctx)
      const plan = await planGc(ctx, {graceMs: 0, here: gone})
      assert.deepEqual(sorted(plan.ips.map((c) => c.ip)), sorted(want.workload))
      assert.deepEqual(sorted(plan.notWorkload.map((c) => c.ip)), sorted(want.notWorkload))
      assert.deepEqual(plan.tooYoung, [])
      const r = await runGc(ctx, plan)
      assert.deepEqual(sorted(r.released), sorted(want.workload))
      for (const ip of want.workload) assert.equal((await ipStatus(ctx, ip)).state, 'free', ip)
      for (const ip of [...want.notWorkload, ...want.tunnels])
        assert.equal((await ipStatus(ctx, ip)).state, 'assigned', ip)
      assert.ok(await ctx.store.get(keys.handle('gateway')), 'the manual handle stays')
      // A second gc finds the same non-workload leaks and still releases nothing.
      const again = await planGc(ctx, {graceMs: 0, here: gone})
      assert.deepEqual([again.ips, again.handles], [[], []])
      assert.deepEqual(sorted(again.notWorkload.map((c) => c.ip)), sorted(want.notWorkload))
      await assertInvariants(ctx.store, clock.now())
    })
  })

  describe(`${name}: attachments with a recorded network namespace are judged by it`, () => {
    it('released only by gc on their own node once the netns is gone; alive or on another node they stay', async () => {
      const {ctx, clock} = await freshCtx({open: open as StoreOpener})
      await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
      // As ipamctl-ipam writes them for a container wired by a main plugin that keeps no endpoint record.
      const attach = (ip: string, cid: string, node: string) =>
        assignIp(ctx, {ip, host: node, handle: `net.${cid}`, attrs: {node, [NETNS_ATTRIBUTE]: `/var/run/netns/${cid}`}})
      await attach('10.65.0.40', 'alive', 'node-1')
      await attach('10.65.0.41', 'dead', 'node-1')
      await attach('10.65.0.42', 'far', 'node-2')
      // A Kubernetes pod's, from ipamctl-ipam under another main plugin: no endpoint record either.
      await assignIp(ctx, {
        ip: '10.65.0.43',
        host: 'node-1',
        handle: 'net.pod',
        attrs: {node: 'node-1', namespace: 'default', pod: 'web-0', [NETNS_ATTRIBUTE]: '/var/run/netns/pod'},
      })
      const here = {node: 'node-1', exists: (p: string) => p === '/var/run/netns/alive' || p === '/var/run/netns/pod'}
      const plan = await planGc(ctx, {graceMs: 0, here})
      assert.deepEqual(
        plan.ips.map((c) => c.ip),
        ['10.65.0.41'],
      )
      assert.deepEqual(
        plan.netnsAlive.map((c) => c.ip),
        ['10.65.0.40', '10.65.0.43'],
      )
      assert.deepEqual(
        plan.otherNode.map((c) => [c.ip, c.node, c.netns]),
        [['10.65.0.42', 'node-2', '/var/run/netns/far']],
      )
      // Without knowing where it runs, gc can judge none of them.
      const blind = await planGc(ctx, {graceMs: 0})
      assert.deepEqual([blind.ips, blind.netnsAlive], [[], []])
      assert.equal(blind.otherNode.length, 4)
      const r = await runGc(ctx, plan)
      assert.deepEqual(r.released, ['10.65.0.41'])
      for (const ip of ['10.65.0.40', '10.65.0.42', '10.65.0.43'])
        assert.equal((await ipStatus(ctx, ip)).state, 'assigned', ip)
      await assertInvariants(ctx.store, clock.now())
    })
  })
}
