// The IPAM plugin's logic in-process (dispatcher + plugin, a MemoryStore, an injected clock and lock):
// ADD/DEL/CHECK/STATUS/GC semantics as calico-ipam's, without starting processes.
import assert from 'node:assert/strict'
import {beforeEach, describe, it} from 'node:test'
import {ipamPlugin} from '../../../src/plugins/ipam/plugin.ts'
import type {IpamPluginDeps} from '../../../src/lib/node-ipam/request.ts'
import {resolvePools} from '../../../src/lib/node-ipam/operations.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipsByHandle, ipStatus} from '../../../src/lib/ipam/query.ts'
import {DatastoreUnavailableError} from '../../../src/lib/errors.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {lockDatastore, unlockDatastore} from '../../../src/lib/ipam/cluster-info.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import type {DatastoreSettings} from '../../../src/lib/store/settings.ts'
import {addEnv, errorOf, type RunOutcome, runSkel} from '../../lib/cni/helpers.ts'

const NOW = new Date('2026-01-02T03:04:05.250Z')
const NET = 'k8s-pod-network'

let store: MemoryStore
let ctx: Ctx
let lockEvents: string[]
let opened: DatastoreSettings[]

function deps(extra: Partial<IpamPluginDeps> = {}): IpamPluginDeps {
  return {
    openStore: async (s) => {
      opened.push(s)
      return store
    },
    clock: {now: () => NOW},
    readFile: () => {
      throw new Error('ENOENT')
    },
    osHostname: () => 'os-host',
    lock: (file) => {
      lockEvents.push(`lock ${file}`)
      return () => lockEvents.push('unlock')
    },
    ...extra,
  }
}

function conf(extra: Record<string, unknown> = {}, ipam: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: NET,
    type: 'calico',
    nodename: 'node-1',
    datastore_path: '/nonexistent/ipam.db',
    ipam_lock_file: '/tmp/test-ipam.lock',
    ...extra,
    ipam: {type: 'calico-ipam', ...ipam},
  })
}

async function run(
  env: Record<string, string | undefined>,
  stdin: string,
  d: Partial<IpamPluginDeps> = {},
): Promise<RunOutcome> {
  return runSkel(ipamPlugin(deps(d)), env, stdin)
}

const add = (cid: string, stdin = conf(), extraEnv: Record<string, string> = {}) =>
  run(addEnv({CNI_CONTAINERID: cid, ...extraEnv}), stdin)
const del = (cid: string, stdin = conf(), extraEnv: Record<string, string> = {}) =>
  run(addEnv({CNI_COMMAND: 'DEL', CNI_CONTAINERID: cid, ...extraEnv}), stdin)

function okJson(r: RunOutcome): {ips: {address: string}[]; routes?: {dst: string}[]} {
  assert.equal(r.code, 0, `exit ${r.code}: ${r.stdout}\n${r.stderr}`)
  return JSON.parse(r.stdout)
}

beforeEach(async () => {
  store = new MemoryStore()
  ctx = makeCtx(store, {clock: {now: () => NOW}})
  lockEvents = []
  opened = []
  await createPools(ctx, [
    {name: 'default-ipv4', cidr: '10.65.0.0/16'},
    {name: 'default-ipv6', cidr: 'fd00:65::/48'},
    {name: 'other4', cidr: '10.66.0.0/16'},
  ])
})

describe('ADD', () => {
  it('assigns one block-masked IPv4 address with a route, under the handle <network>.<containerID>', async () => {
    const r = okJson(await add('c1'))
    assert.equal(r.ips.length, 1)
    assert.match(r.ips[0]!.address, /^10\.65\.\d+\.\d+\/26$/)
    assert.deepEqual(r.routes, [{dst: r.ips[0]!.address}])
    const ip = r.ips[0]!.address.split('/')[0]!
    assert.deepEqual(await ipsByHandle(ctx, `${NET}.c1`), [ip])
    const st = await ipStatus(ctx, ip)
    assert.equal(st.state, 'assigned')
    if (st.state === 'assigned')
      assert.deepEqual(st.owner.attrs, {
        node: 'node-1',
        timestamp: '2026-01-02 03:04:05.25 +0000 UTC',
        'ipamctl.io/netns': '/var/run/netns/x',
      })
    assert.equal(opened[0]!.path, '/nonexistent/ipam.db')
    assert.deepEqual(lockEvents, ['lock /tmp/test-ipam.lock', 'unlock'])
  })

  it('records pod and namespace for kubelet arguments', async () => {
    const r = okJson(
      await add('c1', conf(), {
        CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=c1',
      }),
    )
    const st = await ipStatus(ctx, r.ips[0]!.address.split('/')[0]!)
    assert.equal(st.state, 'assigned')
    if (st.state === 'assigned')
      assert.deepEqual(st.owner.attrs, {
        node: 'node-1',
        timestamp: '2026-01-02 03:04:05.25 +0000 UTC',
        pod: 'web-0',
        namespace: 'prod',
        'ipamctl.io/netns': '/var/run/netns/x',
      })
  })

  it('gives a second container a different address', async () => {
    const a = okJson(await add('c1')).ips[0]!.address
    const b = okJson(await add('c2')).ips[0]!.address
    assert.notEqual(a, b)
  })

  it('dual stack with assign_ipv6 "true"; IPv6 only with assign_ipv4 "false"', async () => {
    const both = okJson(await add('c1', conf({}, {assign_ipv6: 'true'})))
    assert.equal(both.ips.length, 2)
    assert.match(both.ips[0]!.address, /^10\.65\./)
    assert.match(both.ips[1]!.address, /^fd00:65:[0-9a-f:]+\/122$/)
    assert.equal(both.routes!.length, 2)
    const only6 = okJson(await add('c2', conf({}, {assign_ipv4: 'false', assign_ipv6: 'true'})))
    assert.equal(only6.ips.length, 1)
    assert.match(only6.ips[0]!.address, /^fd00:65:/)
  })

  it('only the exact strings "false"/"true" switch families', async () => {
    const r = okJson(await add('c1', conf({}, {assign_ipv4: 'False', assign_ipv6: 'TRUE'})))
    assert.equal(r.ips.length, 1)
    assert.match(r.ips[0]!.address, /^10\.65\./)
  })

  it('uses ipv4_pools given by name or (unmasked) CIDR', async () => {
    assert.match(okJson(await add('c1', conf({}, {ipv4_pools: ['other4']}))).ips[0]!.address, /^10\.66\./)
    assert.match(okJson(await add('c2', conf({}, {ipv4_pools: ['10.66.7.7/16']}))).ips[0]!.address, /^10\.66\./)
  })

  it('reports pool errors with upstream messages', async () => {
    const unknown = errorOf(await add('c1', conf({}, {ipv4_pools: ['nope']})))
    assert.deepEqual([unknown.code, unknown.msg], [7, 'error parsing pool "nope": invalid CIDR address: nope'])
    const family = errorOf(await add('c1', conf({}, {ipv4_pools: ['default-ipv6']})))
    assert.equal(family.msg, '"fd00:65::" isn\'t a IPv4 address')
    const missing = errorOf(await add('c1', conf({}, {ipv4_pools: ['10.99.0.0/16']})))
    assert.deepEqual(
      [missing.code, missing.msg],
      [999, 'the given pool (10.99.0.0/16) does not exist, or is not enabled'],
    )
    assert.deepEqual(await store.listKeys(keys.handlePrefix()), [])
  })

  it('resolvePools keeps the order given', async () => {
    assert.deepEqual(await resolvePools(ctx, ['other4', '10.65.0.0/16'], 4), ['10.66.0.0/16', '10.65.0.0/16'])
    assert.deepEqual(await resolvePools(ctx, [], 6), [])
  })

  it('IP= assigns exactly that address as /32 (or /128), without routes', async () => {
    const r = okJson(await add('c1', conf(), {CNI_ARGS: 'IP=10.65.3.3'}))
    assert.deepEqual(r, {cniVersion: '1.0.0', ips: [{address: '10.65.3.3/32'}], dns: {}})
    assert.deepEqual(await ipsByHandle(ctx, `${NET}.c1`), ['10.65.3.3'])
    const r6 = okJson(await add('c2', conf(), {CNI_ARGS: 'IP=fd00:65::99'}))
    assert.deepEqual(r6.ips, [{address: 'fd00:65::99/128'}])
  })

  it('IP= of an address in use fails and changes nothing', async () => {
    okJson(await add('c1', conf(), {CNI_ARGS: 'IP=10.65.3.3'}))
    const e = errorOf(await add('c2', conf(), {CNI_ARGS: 'IP=10.65.3.3'}))
    assert.equal(e.code, 999)
    assert.match(e.msg, /10\.65\.3\.3 is already assigned/)
    await assert.rejects(ipsByHandle(ctx, `${NET}.c2`), /not found/)
  })

  it('IP= outside every pool is an invalid-config error', async () => {
    const e = errorOf(await add('c1', conf(), {CNI_ARGS: 'IP=192.168.1.1'}))
    assert.equal(e.code, 7)
    assert.match(e.msg, /not in a configured pool/)
  })

  it('rejects unknown CNI_ARGS unless IgnoreUnknown', async () => {
    const e = errorOf(await add('c1', conf(), {CNI_ARGS: 'FOO=bar'}))
    assert.deepEqual([e.code, e.msg], [999, 'ARGS: unknown args ["FOO=bar"]'])
    assert.equal(opened.length, 0, 'the datastore is not even opened')
    okJson(await add('c1', conf(), {CNI_ARGS: 'IgnoreUnknown=1;FOO=bar'}))
  })

  it("when IPv6 comes back short, releases the IPv4 address again and reports upstream's message", async () => {
    await createPools(ctx, [{name: 'tiny6', cidr: 'fd00:99::/126', blockSize: 126}])
    for (let i = 0; i < 4; i++)
      okJson(await add(`fill${i}`, conf({}, {assign_ipv4: 'false', assign_ipv6: 'true', ipv6_pools: ['tiny6']})))
    const e = errorOf(await add('dual', conf({}, {assign_ipv6: 'true', ipv6_pools: ['tiny6']})))
    assert.equal(e.code, 999)
    assert.match(e.msg, /^failed to request IPv6 addresses: Assigned 0 out of 1 requested IPv6 addresses; /)
    // The IPv4 address it got was released: the handle holds nothing.
    assert.deepEqual(await ipsByHandle(ctx, `${NET}.dual`).catch(() => []), [])
  })

  it('when IPv4 comes back short, releases the IPv6 address again', async () => {
    await createPools(ctx, [{name: 'tiny4', cidr: '10.99.0.0/30', blockSize: 30}])
    for (let i = 0; i < 4; i++) okJson(await add(`fill${i}`, conf({}, {ipv4_pools: ['tiny4']})))
    const e = errorOf(await add('dual', conf({}, {assign_ipv6: 'true', ipv4_pools: ['tiny4']})))
    assert.match(e.msg, /^failed to request IPv4 addresses: Assigned 0 out of 1 requested IPv4 addresses; /)
    assert.deepEqual(await ipsByHandle(ctx, `${NET}.dual`).catch(() => []), [])
  })

  it('uses the node name rules: nodename file, then hostname, then the OS host name', async () => {
    const viaFile = await run(
      addEnv({CNI_CONTAINERID: 'c1'}),
      conf({nodename: undefined, nodename_file: '/my/nodename'}),
      {
        readFile: (f) => (f === '/my/nodename' ? 'file-node\n' : ''),
      },
    )
    const ip = okJson(viaFile).ips[0]!.address.split('/')[0]!
    const st = await ipStatus(ctx, ip)
    assert.equal(st.state === 'assigned' && st.owner.attrs.node, 'file-node')
    const viaOs = okJson(await run(addEnv({CNI_CONTAINERID: 'c2'}), conf({nodename: undefined})))
    const st2 = await ipStatus(ctx, viaOs.ips[0]!.address.split('/')[0]!)
    assert.equal(st2.state === 'assigned' && st2.owner.attrs.node, 'os-host')
  })
})

describe('DEL', () => {
  it('releases the handle and is idempotent', async () => {
    const ip = okJson(await add('c1')).ips[0]!.address.split('/')[0]!
    const r = await del('c1')
    assert.deepEqual([r.code, r.stdout], [0, ''])
    assert.equal((await ipStatus(ctx, ip)).state, 'free')
    assert.deepEqual([(await del('c1')).code, (await del('c1')).stdout], [0, ''])
  })

  it('succeeds for a container that was never added, and ignores IP=', async () => {
    assert.equal((await del('never')).code, 0)
    const ip = okJson(await add('c1')).ips[0]!.address.split('/')[0]!
    assert.equal((await del('c1', conf(), {CNI_ARGS: 'IP=10.65.200.200'})).code, 0)
    assert.equal((await ipStatus(ctx, ip)).state, 'free')
  })

  it('releases the legacy workload handle too (container ID, or namespace.pod for k8s)', async () => {
    const legacy = await assignIp(ctx, {ip: '10.65.9.9', host: 'node-1', handle: 'c1'})
    const k8sLegacy = await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0, handle: 'prod.web-0'})
    assert.equal((await del('c1')).code, 0)
    assert.equal((await ipStatus(ctx, legacy.address)).state, 'free')
    assert.equal((await del('c2', conf(), {CNI_ARGS: 'K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0'})).code, 0)
    assert.equal((await ipStatus(ctx, k8sLegacy.v4.ips[0]!.address)).state, 'free')
  })

  it("does not touch another network's handle for the same container", async () => {
    const ip = okJson(await add('c1', conf({name: 'net-b'}))).ips[0]!.address.split('/')[0]!
    assert.equal((await del('c1')).code, 0)
    assert.equal((await ipStatus(ctx, ip)).state, 'assigned')
  })

  it('fails with code 11 when the datastore is unavailable', async () => {
    const r = await run(addEnv({CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1'}), conf(), {
      openStore: async () => {
        throw new DatastoreUnavailableError('cannot open embedded datastore x: locked')
      },
    })
    assert.deepEqual(errorOf(r), {cniVersion: '1.0.0', code: 11, msg: 'cannot open embedded datastore x: locked'})
  })
})

describe('CHECK', () => {
  const check = (cid: string, prevResult: unknown, v = '1.0.0') =>
    run(addEnv({CNI_COMMAND: 'CHECK', CNI_CONTAINERID: cid}), conf({cniVersion: v, prevResult}))

  it("passes when the handle holds exactly the prevResult's addresses (any prefix length, any version)", async () => {
    const r = okJson(await add('c1', conf({}, {assign_ipv6: 'true'})))
    assert.deepEqual([(await check('c1', r)).code, (await check('c1', r)).stdout], [0, ''])
    const narrowed = {
      cniVersion: '0.4.0',
      ips: r.ips.map((i) => ({
        version: i.address.includes(':') ? '6' : '4',
        address: i.address.replace(/\/\d+$/, i.address.includes(':') ? '/128' : '/32'),
        interface: 0,
      })),
      interfaces: [{name: 'eth0'}],
    }
    assert.equal((await check('c1', narrowed, '0.4.0')).code, 0)
  })

  it('fails when an address differs, is missing or extra', async () => {
    const r = okJson(await add('c1'))
    const wrong = {cniVersion: '1.0.0', ips: [{address: '10.65.250.250/26'}]}
    const e = errorOf(await check('c1', wrong))
    assert.equal(e.code, 999)
    assert.match(
      e.msg,
      /^IPAM CHECK failed: handle k8s-pod-network\.c1 holds \[10\.65\.\d+\.\d+\] but prevResult lists \[10\.65\.250\.250\]$/,
    )
    const extra = {cniVersion: '1.0.0', ips: [...r.ips, {address: '10.65.250.250/26'}]}
    assert.equal((await check('c1', extra)).code, 1)
  })

  it('fails after DEL (the reservation is gone)', async () => {
    const r = okJson(await add('c1'))
    await del('c1')
    const e = errorOf(await check('c1', r))
    assert.equal(e.msg, 'IPAM CHECK failed: no addresses are allocated to handle k8s-pod-network.c1')
  })

  it('needs a prevResult that parses', async () => {
    assert.deepEqual(
      [errorOf(await check('c1', undefined)).code, errorOf(await check('c1', undefined)).msg],
      [7, 'CHECK needs a prevResult in the network configuration'],
    )
    assert.equal(errorOf(await check('c1', {cniVersion: '1.0.0', ips: [{address: 'x'}]})).code, 6)
  })
})

describe('GC', () => {
  const gc = (attachments: unknown, extra: Record<string, unknown> = {}) =>
    run(
      {CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin'},
      conf({cniVersion: '1.1.0', 'cni.dev/valid-attachments': attachments, ...extra}),
    )

  it('releases only the attachments that are not listed', async () => {
    const ips: Record<string, string> = {}
    for (const c of ['keep1', 'keep2', 'gone1', 'gone2']) ips[c] = okJson(await add(c)).ips[0]!.address.split('/')[0]!
    const otherNet = okJson(await add('gone3', conf({name: 'net-b'}))).ips[0]!.address.split('/')[0]!
    const legacy = await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0, handle: `${NET}.default.pod-x`})
    lockEvents = []
    const r = await gc([
      {containerID: 'keep1', ifname: 'eth0'},
      {containerID: 'keep2', ifname: 'net1'},
    ])
    assert.deepEqual([r.code, r.stdout], [0, ''])
    assert.equal((await ipStatus(ctx, ips.keep1!)).state, 'assigned')
    assert.equal((await ipStatus(ctx, ips.keep2!)).state, 'assigned')
    assert.equal((await ipStatus(ctx, ips.gone1!)).state, 'free')
    assert.equal((await ipStatus(ctx, ips.gone2!)).state, 'free')
    assert.equal((await ipStatus(ctx, otherNet)).state, 'assigned', 'another network is not ours to collect')
    assert.equal(
      (await ipStatus(ctx, legacy.v4.ips[0]!.address)).state,
      'assigned',
      'non-sandbox handles are left alone',
    )
    assert.deepEqual(lockEvents, ['lock /tmp/test-ipam.lock', 'unlock'])
  })

  it('accepts the older cni.dev/attachments spelling and an empty list', async () => {
    const ip = okJson(await add('c1')).ips[0]!.address.split('/')[0]!
    const r = await run(
      {CNI_COMMAND: 'GC', CNI_PATH: '/p'},
      conf({cniVersion: '1.1.0', 'cni.dev/attachments': [{containerID: 'c1', ifname: 'eth0'}]}),
    )
    assert.equal(r.code, 0)
    assert.equal((await ipStatus(ctx, ip)).state, 'assigned')
    assert.equal((await gc([])).code, 0)
    assert.equal((await ipStatus(ctx, ip)).state, 'free')
  })

  it('refuses to run without the attachment list', async () => {
    const ip = okJson(await add('c1')).ips[0]!.address.split('/')[0]!
    const e = errorOf(await run({CNI_COMMAND: 'GC', CNI_PATH: '/p'}, conf({cniVersion: '1.1.0'})))
    assert.deepEqual([e.code, e.msg], [7, 'GC needs cni.dev/valid-attachments in the network configuration'])
    assert.equal(errorOf(await gc('x')).code, 7)
    assert.equal((await ipStatus(ctx, ip)).state, 'assigned')
  })
})

describe('STATUS', () => {
  it('succeeds silently when the datastore answers', async () => {
    const r = await run({CNI_COMMAND: 'STATUS'}, conf({cniVersion: '1.1.0'}))
    assert.deepEqual([r.code, r.stdout], [0, ''])
  })

  it('is code 50 when it does not', async () => {
    const r = await run({CNI_COMMAND: 'STATUS'}, conf({cniVersion: '1.1.0'}), {
      openStore: async () => {
        throw new DatastoreUnavailableError('etcd at http://127.0.0.1:1 is unavailable')
      },
    })
    assert.deepEqual(errorOf(r), {
      cniVersion: '1.1.0',
      code: 50,
      msg: 'plugin not available',
      details: 'etcd at http://127.0.0.1:1 is unavailable',
    })
  })
})

describe('ADD while the datastore is locked', () => {
  it("refuses with upstream's readiness message (try again later) and assigns nothing; works again once unlocked", async () => {
    await lockDatastore(ctx)
    const e = errorOf(await add('c1'))
    assert.equal(e.code, 11)
    assert.equal(e.msg, 'Calico is currently not ready to process requests')
    assert.equal((await store.list(keys.blockPrefix())).length, 0)
    await unlockDatastore(ctx)
    okJson(await add('c1'))
  })
})
