// The REAL main plugin executable (`node bin/ipamctl-cni.cjs`) wiring real pods: every test makes its own network
// namespaces (`ip netns add ipamctl-c-…`) and a temp embedded datastore with a pool in a private range
// (10.198.<n>.0/24 and fd00:198::<n>:0/112, one per datastore, so two live pods never share an address), starts the
// plugin the way a container runtime does (a clean environment with the CNI_* variables, the netconf on stdin), and
// looks at the result with `ip -j …` and at the datastore in-process. Also: delegation to Debian's host-local
// (/usr/lib/cni) and libcni's driving of the plugin through cnitool (.cache/cni-tools/bin/cnitool, built by
// scripts/install-test-deps.sh). Needs root and a working `ip netns`; skipped with a reason otherwise. Every namespace
// and host veth a test makes is removed by that test's `after` hook, also when it fails, and again by the file's.
import {type ProcResult, runProcess} from '../../support/process.ts'
import assert from 'node:assert/strict'
import {createHash, randomBytes, randomUUID} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it, type TestContext} from 'node:test'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {utilization} from '../../../src/lib/ipam/query.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'
import {startAgentProc} from '../../support/agent.ts'
import {
  ip,
  ipJson,
  ipLink,
  listenInNetns,
  netnsSkipReason,
  tcpExchange,
  tryIp,
  type IpLink,
  type IpLinkAddrs,
  type IpRoute,
} from '../../support/netns.ts'
import {withStore} from '../../support/store.ts'
import {notInfo} from '../../support/log.ts'

const CNI_BIN = path.join(ROOT, 'bin', 'ipamctl-cni.cjs')
const IPAM_BIN = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')
const CNITOOL = path.join(ROOT, '.cache', 'cni-tools', 'bin', 'cnitool')
const TRACE = path.join(ROOT, 'test', 'support', 'trace-modules.mjs')
const HOST_LOCAL_DIR = '/usr/lib/cni'
const NET = 'k8s-pod-network'
const NODE = 'node-1'
const HOST_MAC = 'ee:ee:ee:ee:ee:ee'
const HOST_LL6 = 'fe80::ecee:eeff:feee:eeee'

const RUN = randomBytes(3).toString('hex')
/** Third octet of this run's first pool: two runs at once (two checkouts on one host) rarely share a subnet. */
const RUN_OCTET = randomBytes(1)[0]!
const allNs = new Set<string>()
const allLinks = new Set<string>()

const SKIP = netnsSkipReason(`ipamctl-c-${RUN}-probe`)
const SKIP_HOST_LOCAL =
  SKIP ??
  (fs.existsSync(path.join(HOST_LOCAL_DIR, 'host-local'))
    ? undefined
    : `${HOST_LOCAL_DIR}/host-local missing (Debian containernetworking-plugins; run scripts/install-test-deps.sh)`)
const SKIP_CNITOOL =
  SKIP ??
  (fs.existsSync(CNITOOL)
    ? undefined
    : `${path.relative(ROOT, CNITOOL)} missing (run scripts/install-test-deps.sh; it builds cnitool from the CNI source folder its header names)`)

const linkExists = (name: string): boolean => {
  try {
    ip('link', 'show', 'dev', name)
    return true
  } catch {
    return false
  }
}
/** Links of a netns other than lo. */
const podLinks = (ns: string): string[] =>
  ipJson<IpLink[]>('-n', ns, 'link', 'show')
    .map((l) => l.ifname)
    .filter((n) => n !== 'lo')
const podAddrs = (ns: string, dev = 'eth0'): {family: string; local: string; prefixlen: number; scope: string}[] =>
  ipJson<IpLinkAddrs[]>('-n', ns, 'addr', 'show', 'dev', dev).flatMap((l) => l.addr_info ?? [])
const hostRoutes = (addr: string): IpRoute[] =>
  ipJson<IpRoute[]>(
    addr.includes(':') ? '-6' : '-4',
    'route',
    'show',
    'table',
    'all',
    addr.includes(':') ? `${addr}/128` : `${addr}/32`,
  )

// ------------------------------------------------------------------------------------------------ processes

type Proc = ProcResult

/** Start `file` (a node script is run with this node) with exactly `env` plus a PATH that has node on it. */
function exec(file: string, env: Record<string, string | undefined>, stdin = '', args: string[] = []): Promise<Proc> {
  const clean: NodeJS.ProcessEnv = {PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`}
  for (const [k, v] of Object.entries(env)) if (v !== undefined) clean[k] = v
  const [cmd, argv] = file.endsWith('.js') ? [process.execPath, [file, ...args]] : [file, args]
  return runProcess(cmd, argv, {cwd: ROOT, env: clean, stdin})
}

function ok(p: Proc, what = 'plugin'): void {
  assert.equal(p.code, 0, `${what} failed (${p.code}):\nstdout: ${p.stdout}\nstderr: ${p.stderr}`)
}
function addResult(p: Proc, what = 'plugin'): AddResult {
  ok(p, what)
  return JSON.parse(p.stdout)
}
/** A successful DEL/CHECK: exit 0 and nothing on stdout. */
function quiet(p: Proc, what: string): void {
  assert.deepEqual({code: p.code, stdout: p.stdout}, {code: 0, stdout: ''}, `${what}: stderr: ${p.stderr}`)
}
function cniError(p: Proc): {cniVersion?: string; code: number; msg: string; details?: string} {
  assert.equal(p.code, 1, `expected exit 1, got ${p.code}: ${p.stdout}${p.stderr}`)
  const e = JSON.parse(p.stdout) // exactly one JSON value on stdout
  assert.equal(typeof e.code, 'number')
  assert.equal(typeof e.msg, 'string')
  return e
}

// ------------------------------------------------------------------------------------------------ datastores

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cni-netns-'))
let boxes = 0

interface Sandbox {
  dir: string
  db: string
  /** Pool CIDRs of this datastore. */
  v4: string
  v6: string
  /** The netconf (a JSON string) of the main plugin. */
  conf(o?: {version?: string; ipam?: Record<string, unknown>; extra?: Record<string, unknown>}): string
  confObj(o?: {
    version?: string
    ipam?: Record<string, unknown>
    extra?: Record<string, unknown>
  }): Record<string, unknown>
}

async function sandbox(): Promise<Sandbox> {
  const n = ++boxes
  const dir = path.join(tmp, `box${n}`)
  fs.mkdirSync(dir)
  const db = path.join(dir, 'ipam.db')
  const octet = (RUN_OCTET + n) % 256
  const v4 = `10.198.${octet}.0/24`
  const v6 = `fd00:198::${octet.toString(16)}:0/112`
  const store = SqliteStore.open(db)
  try {
    await createPools(makeCtx(store), [
      {name: 'test-ipv4', cidr: v4},
      {name: 'test-ipv6', cidr: v6},
    ])
  } finally {
    await store.close()
  }
  const confObj: Sandbox['confObj'] = (o = {}) => ({
    cniVersion: o.version ?? '1.0.0',
    name: NET,
    type: 'ipamctl-cni',
    nodename: NODE,
    datastore_path: db,
    ipam_lock_file: path.join(dir, 'ipam.lock'),
    ...o.extra,
    ipam: {type: 'ipamctl-ipam', ...o.ipam},
  })
  return {dir, db, v4, v6, confObj, conf: (o) => JSON.stringify(confObj(o))}
}

interface StoreState {
  /** Addresses in use over all blocks. */
  inUse: number
  blocks: number
  handles: string[]
  endpoints: string[]
}
const storeState = (db: string): Promise<StoreState> =>
  withStore(db, async (s) => ({
    inUse: Number((await utilization(makeCtx(s))).reduce((sum, p) => sum + p.inUse, 0n)),
    blocks: (await s.listKeys(keys.blockPrefix())).length,
    handles: await s.listKeys(keys.handlePrefix()),
    endpoints: await s.listKeys(keys.resourcePrefix('workloadendpoints')),
  }))

async function assertNothingAllocated(db: string, what: string): Promise<StoreState> {
  const st = await storeState(db)
  assert.deepEqual(
    {inUse: st.inUse, handles: st.handles, endpoints: st.endpoints},
    {inUse: 0, handles: [], endpoints: []},
    `${what}: the datastore still holds something`,
  )
  return st
}

// ------------------------------------------------------------------------------------------------ pods

interface Pod {
  ns: string
  netns: string
  cid: string
  ifName: string
  /** K8S_POD_NAMESPACE / K8S_POD_NAME when the pod is a k8s one. */
  k8s?: {namespace: string; name: string}
  cniArgs?: string
  /** The host veth name the plugin must choose. */
  hostVeth: string
  /** The WorkloadEndpoint key the plugin must write. */
  wepKey: string
  env(command: string, extra?: Record<string, string | undefined>): Record<string, string | undefined>
}

const esc = (s: string) => s.replace(/-/g, '--')
let pods = 0

/** A fresh netns (lo up) and the identifiers of a pod in it; both are cleaned up after the test `t`. */
function newPod(t: TestContext, o: {k8s?: boolean; cniArgs?: string; ifName?: string} = {}): Pod {
  const n = ++pods
  const ns = `ipamctl-c-${RUN}-${n}`
  ip('netns', 'add', ns)
  allNs.add(ns)
  ip('-n', ns, 'link', 'set', 'lo', 'up')
  const k8s = o.k8s === false ? undefined : {namespace: 'team-a', name: `web-${RUN}-${n}`}
  // containerd-style IDs for k8s pods; for plain CNI a dashed one (to see the dashes doubled in the WEP name); its
  // host veth is named from a SHA-1 of the whole ID.
  const cid = k8s ? randomBytes(32).toString('hex') : `c-${randomBytes(4).toString('hex')}-${RUN}-${n}`
  const ifName = o.ifName ?? 'eth0'
  const hostVeth = k8s
    ? `cali${createHash('sha1').update(`${k8s.namespace}.${k8s.name}`).digest('hex').slice(0, 11)}`
    : `cali${createHash('sha1').update(cid).digest('hex').slice(0, 11)}`
  allLinks.add(hostVeth)
  const cniArgs =
    o.cniArgs ??
    (k8s
      ? `IgnoreUnknown=1;K8S_POD_NAMESPACE=${k8s.namespace};K8S_POD_NAME=${k8s.name};K8S_POD_INFRA_CONTAINER_ID=${cid};K8S_POD_UID=${randomUUID()}`
      : undefined)
  const wepName = k8s
    ? `${esc(NODE)}-k8s-${esc(k8s.name)}-${esc(ifName)}`
    : `${esc(NODE)}-cni-${esc(cid)}-${esc(ifName)}`
  const pod: Pod = {
    ns,
    netns: `/var/run/netns/${ns}`,
    cid,
    ifName,
    k8s,
    cniArgs,
    hostVeth,
    wepKey: `/calico/resources/v3/projectcalico.org/workloadendpoints/${k8s?.namespace ?? 'default'}/${wepName}`,
    env: (command, extra = {}) => ({
      CNI_COMMAND: command,
      CNI_CONTAINERID: cid,
      CNI_NETNS: pod.netns,
      CNI_IFNAME: ifName,
      CNI_ARGS: cniArgs,
      CNI_PATH: '/opt/cni/bin',
      ...extra,
    }),
  }
  t.after(() => {
    tryIp('link', 'del', 'dev', hostVeth)
    tryIp('netns', 'del', ns)
  })
  return pod
}

const cni = (pod: Pod, command: string, stdin: string, extra: Record<string, string | undefined> = {}) =>
  exec(CNI_BIN, pod.env(command, extra), stdin)

interface AddResult {
  cniVersion: string
  interfaces: {name: string; mac?: string; mtu?: number; sandbox?: string}[]
  ips: {version?: string; address: string; interface?: number; gateway?: string}[]
  routes?: {dst: string; gw?: string}[]
  dns: object
}

const addrOf = (cidr: string) => cidr.split('/')[0]!

/** Everything an ADD must have done, looked at from outside: result shape, pod netns, host, WorkloadEndpoint. */
async function assertWired(
  sb: Sandbox,
  pod: Pod,
  r: AddResult,
  o: {version: string; v6?: boolean; mtu?: number},
): Promise<{v4: string; v6?: string}> {
  // Result shape.
  assert.equal(r.cniVersion, o.version)
  assert.equal(r.interfaces.length, 2)
  assert.deepEqual(
    {name: r.interfaces[0]!.name, mac: r.interfaces[0]!.mac, sandbox: r.interfaces[0]!.sandbox},
    {name: pod.hostVeth, mac: HOST_MAC, sandbox: undefined},
  )
  const podLink = ipLink('-n', pod.ns, 'link', 'show', 'dev', pod.ifName)
  assert.deepEqual(
    {name: r.interfaces[1]!.name, mac: r.interfaces[1]!.mac, sandbox: r.interfaces[1]!.sandbox},
    {name: pod.ifName, mac: podLink.address, sandbox: pod.netns},
  )
  assert.equal(r.ips.length, o.v6 ? 2 : 1, JSON.stringify(r.ips))
  const v4 = addrOf(r.ips[0]!.address)
  const v6 = o.v6 ? addrOf(r.ips[1]!.address) : undefined
  assert.ok(inPool(v4, sb.v4), `${v4} in ${sb.v4}`)
  assert.deepEqual(r.ips[0], {...(o.version.startsWith('0.') ? {version: '4'} : {}), address: `${v4}/32`, interface: 1})
  if (v6) {
    assert.ok(v6.startsWith(sb.v6.split('::')[0]!), `${v6} in ${sb.v6}`)
    assert.deepEqual(r.ips[1], {
      ...(o.version.startsWith('0.') ? {version: '6'} : {}),
      address: `${v6}/128`,
      interface: 1,
    })
  }
  // Routes are IPAM's: one per address, block-masked (/26 and /122 blocks).
  assert.deepEqual(r.routes, [{dst: `${v4}/26`}, ...(v6 ? [{dst: `${v6}/122`}] : [])])
  assert.deepEqual(r.dns, {})

  // Pod netns: the link is up with the /32 (and /128), routes via 169.254.1.1 (and the host's v6 link-local).
  assert.deepEqual(podLinks(pod.ns), [pod.ifName])
  assert.ok(podLink.flags.includes('UP'), `pod link up: ${podLink.flags}`)
  if (o.mtu) assert.equal(podLink.mtu, o.mtu)
  const globals = podAddrs(pod.ns, pod.ifName)
    .filter((a) => a.scope === 'global')
    .map((a) => `${a.local}/${a.prefixlen}`)
  assert.deepEqual(globals, [`${v4}/32`, ...(v6 ? [`${v6}/128`] : [])])
  const routes4 = ipJson<IpRoute[]>('-n', pod.ns, '-4', 'route', 'show').map((x) => ({
    dst: x.dst,
    gateway: x.gateway,
    dev: x.dev,
    scope: x.scope,
  }))
  assert.deepEqual(
    new Set(routes4.map((x) => JSON.stringify(x))),
    new Set([
      JSON.stringify({dst: 'default', gateway: '169.254.1.1', dev: pod.ifName, scope: undefined}),
      JSON.stringify({dst: '169.254.1.1', gateway: undefined, dev: pod.ifName, scope: 'link'}),
    ]),
  )
  if (v6) {
    const def6 = ipJson<IpRoute[]>('-n', pod.ns, '-6', 'route', 'show', 'default')
    assert.deepEqual(
      def6.map((x) => [x.gateway, x.dev]),
      [[HOST_LL6, pod.ifName]],
    )
  }

  // Host: the veth with its fixed MAC, and a route per pod address through it.
  const hostLink = ipLink('link', 'show', 'dev', pod.hostVeth)
  assert.equal(hostLink.address, HOST_MAC)
  assert.ok(hostLink.flags.includes('UP'))
  if (o.mtu) assert.equal(hostLink.mtu, o.mtu)
  for (const a of [v4, v6]) {
    if (!a) continue
    assert.deepEqual(
      hostRoutes(a).map((x) => x.dev),
      [pod.hostVeth],
      `host route to ${a}`,
    )
  }

  // The WorkloadEndpoint, and the addresses held by this attachment's handle.
  const wep = await withStore(sb.db, (s) => s.get(pod.wepKey))
  assert.ok(wep, `WorkloadEndpoint ${pod.wepKey} exists`)
  const spec = JSON.parse(wep.value).spec
  assert.deepEqual(spec.ipNetworks, [`${v4}/32`, ...(v6 ? [`${v6}/128`] : [])])
  assert.equal(spec.interfaceName, pod.hostVeth)
  assert.equal(spec.containerID, pod.cid)
  assert.equal(spec.node, NODE)
  assert.equal(spec.orchestrator, pod.k8s ? 'k8s' : 'cni')
  const st = await storeState(sb.db)
  assert.deepEqual(st.handles, [keys.handle(`${NET}.${pod.cid}`)])
  assert.equal(st.inUse, v6 ? 2 : 1)
  return {v4, v6}
}

/** After DEL: nothing of the pod left in the netns, on the host or in the datastore. */
async function assertGone(
  sb: Sandbox | undefined,
  pod: Pod,
  addrs: (string | undefined)[],
  o: {nsGone?: boolean} = {},
): Promise<void> {
  if (!o.nsGone) assert.deepEqual(podLinks(pod.ns), [], 'no link left in the netns')
  assert.equal(linkExists(pod.hostVeth), false, `host veth ${pod.hostVeth} is gone`)
  for (const a of addrs) if (a) assert.deepEqual(hostRoutes(a), [], `host route to ${a} is gone`)
  if (sb) {
    assert.equal(await withStore(sb.db, (s) => s.get(pod.wepKey)), undefined, 'WorkloadEndpoint is gone')
    await assertNothingAllocated(sb.db, 'after DEL')
  }
}

function inPool(addr: string, cidr: string): boolean {
  const [base] = cidr.split('/')
  return addr.split('.').slice(0, 3).join('.') === base!.split('.').slice(0, 3).join('.')
}

// ------------------------------------------------------------------------------------------------ tests

describe('ipamctl-cni in real network namespaces', {skip: SKIP}, () => {
  before(() => ensureBuilt())
  after(() => {
    for (const l of allLinks) tryIp('link', 'del', 'dev', l)
    for (const n of allNs) tryIp('netns', 'del', n)
    fs.rmSync(tmp, {recursive: true, force: true})
  })

  describe('ADD, then DEL, per result version', () => {
    for (const version of ['1.0.0', '0.3.1', '0.4.0']) {
      it(`${version}: result, pod netns, host veth and route, WorkloadEndpoint; DEL removes it all (twice)`, async (t) => {
        const sb = await sandbox()
        const pod = newPod(t)
        const r = addResult(await cni(pod, 'ADD', sb.conf({version})))
        const {v4} = await assertWired(sb, pod, r, {version})
        // DEL as libcni sends it: with the ADD result as prevResult from 0.4.0 on.
        const delConf =
          version === '0.3.1' ? sb.conf({version}) : JSON.stringify({...sb.confObj({version}), prevResult: r})
        quiet(await cni(pod, 'DEL', delConf), 'DEL')
        await assertGone(sb, pod, [v4])
        quiet(await cni(pod, 'DEL', sb.conf({version})), 'second DEL')
      })
    }

    it('dual stack (assign_ipv6 "true") with the netconf MTU, a plain-CNI pod (container-ID veth name)', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t, {k8s: false})
      const r = addResult(await cni(pod, 'ADD', sb.conf({ipam: {assign_ipv6: 'true'}, extra: {mtu: 1400}})))
      assert.equal(r.interfaces[1]!.mtu, 1400)
      const {v4, v6} = await assertWired(sb, pod, r, {version: '1.0.0', v6: true, mtu: 1400})
      quiet(await cni(pod, 'DEL', sb.conf()), 'DEL')
      await assertGone(sb, pod, [v4, v6])
    })

    it('the host reaches a TCP listener inside the pod over the veth (IPv4 and IPv6)', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const r = addResult(await cni(pod, 'ADD', sb.conf({ipam: {assign_ipv6: 'true'}})))
      const [v4, v6] = r.ips.map((i: {address: string}) => addrOf(i.address))
      assert.ok(v4 && v6, 'an IPv4 and an IPv6 address')
      const listener = await listenInNetns(pod.ns, '::', 18080)
      t.after(() => listener.kill('SIGKILL'))
      assert.equal(await tcpExchange(v4, 18080), 'pong')
      assert.equal(await tcpExchange(v6, 18080), 'pong')
      quiet(await cni(pod, 'DEL', sb.conf()), 'DEL')
      await assertGone(sb, pod, [v4, v6])
    })
  })

  describe('CHECK', () => {
    for (const version of ['0.4.0', '1.0.0']) {
      it(`${version}: passes right after ADD, fails once the pod address is removed`, async (t) => {
        const sb = await sandbox()
        const pod = newPod(t)
        const r = addResult(await cni(pod, 'ADD', sb.conf({version})))
        const v4 = addrOf(r.ips[0]!.address)
        const withPrev = JSON.stringify({...sb.confObj({version}), prevResult: r})
        quiet(await cni(pod, 'CHECK', withPrev), 'CHECK after ADD')
        ip('-n', pod.ns, 'addr', 'del', `${v4}/32`, 'dev', 'eth0')
        const e = cniError(await cni(pod, 'CHECK', withPrev))
        assert.equal(e.code, 999)
        assert.equal(e.msg, `CHECK failed: address ${v4}/32 missing on eth0 in the pod`)
        quiet(await cni(pod, 'DEL', withPrev), 'DEL')
        await assertGone(sb, pod, [v4])
      })
    }

    it('0.3.1 config: CHECK is refused with code 1', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const e = cniError(await cni(pod, 'CHECK', sb.conf({version: '0.3.1'})))
      assert.deepEqual([e.code, e.msg], [1, 'config version does not allow CHECK'])
    })
  })

  describe('DEL edge cases', () => {
    it('netns already deleted: exit 0, host veth and route removed, addresses released', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const r = addResult(await cni(pod, 'ADD', sb.conf()))
      const v4 = addrOf(r.ips[0]!.address)
      ip('netns', 'del', pod.ns)
      quiet(await cni(pod, 'DEL', sb.conf()), 'DEL with the netns gone')
      await assertGone(sb, pod, [v4], {nsGone: true})
    })

    it('CNI_NETNS unset: exit 0, the host veth (and with it the pod end) removed, addresses released', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const r = addResult(await cni(pod, 'ADD', sb.conf()))
      const v4 = addrOf(r.ips[0]!.address)
      quiet(await cni(pod, 'DEL', sb.conf(), {CNI_NETNS: undefined}), 'DEL without CNI_NETNS')
      await assertGone(sb, pod, [v4])
    })

    it('a never-added container: exit 0, nothing touched', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      quiet(await cni(pod, 'DEL', sb.conf()), 'DEL of a never-added container')
      await assertGone(sb, pod, [])
    })
  })

  it('20 parallel ADDs on one node: 20 distinct addresses, all wired; 20 parallel DELs leave nothing', async (t) => {
    const sb = await sandbox()
    const many = Array.from({length: 20}, () => newPod(t))
    const conf = sb.conf()
    const results = await Promise.all(many.map((p) => cni(p, 'ADD', conf)))
    const addrs = results.map((p, i) => {
      const r = addResult(p, `ADD ${i}`)
      assert.equal(r.interfaces[0]!.name, many[i]!.hostVeth)
      return addrOf(r.ips[0]!.address)
    })
    assert.equal(new Set(addrs).size, 20, `addresses: ${addrs.join(' ')}`)
    many.forEach((p, i) => {
      assert.deepEqual(
        podAddrs(p.ns)
          .filter((a) => a.scope === 'global')
          .map((a) => a.local),
        [addrs[i]],
        `pod ${i} address`,
      )
      assert.deepEqual(
        hostRoutes(addrs[i]!).map((x) => x.dev),
        [p.hostVeth],
        `host route of pod ${i}`,
      )
    })
    const st = await storeState(sb.db)
    assert.deepEqual([st.inUse, st.handles.length, st.endpoints.length], [20, 20, 20])
    const dels = await Promise.all(many.map((p) => cni(p, 'DEL', conf)))
    for (const [i, d] of dels.entries()) quiet(d, `DEL ${i}`)
    for (const [i, p] of many.entries()) await assertGone(undefined, p, [addrs[i]])
    await assertNothingAllocated(sb.db, 'after 20 DELs')
  })

  it('through the per-node agent: the same wiring and records, with no datastore opened by the plugin; without the agent, the same directly', async (t) => {
    const sb = await sandbox()
    const socket = path.join(sb.dir, 'agent.sock')
    const agent = await startAgentProc(['--node', NODE, '--socket', socket, '--metrics-address', ''], {
      IPAMCTL_DATASTORE_PATH: sb.db,
    })
    t.after(() => agent.proc.kill('SIGKILL'))
    const conf = sb.conf({extra: {ipamctl_agent_socket: socket}})
    const pod = newPod(t)
    const trace = path.join(sb.dir, 'trace.txt')
    const add = await cni(pod, 'ADD', conf, {NODE_OPTIONS: `--import ${TRACE}`, IPAMCTL_TRACE_MODULES: trace})
    const {v4} = await assertWired(sb, pod, addResult(add), {version: '1.0.0'})
    assert.deepEqual(notInfo(add.stderr), [], 'answered by the agent: no fallback')
    const modules = fs.readFileSync(trace, 'utf8').split('\n')
    assert.ok(
      modules.some((m) => m.endsWith('/unix-exchange/build/Release/unix_exchange.node')),
      'the plugin talked to the agent',
    )
    // The WorkloadEndpoint that assertWired found was written by the agent: the plugin never loaded SQLite.
    assert.deepEqual(
      modules.filter((m) => /better_sqlite3\.node$/.test(m)),
      [],
    )
    const del = await cni(pod, 'DEL', conf)
    quiet(del, 'DEL through the agent')
    assert.deepEqual(notInfo(del.stderr), [])
    await assertGone(sb, pod, [v4])

    agent.proc.kill('SIGTERM')
    assert.equal(await agent.exited, 0)
    const pod2 = newPod(t)
    const add2 = await cni(pod2, 'ADD', conf)
    const direct = await assertWired(sb, pod2, addResult(add2), {version: '1.0.0'})
    assert.ok(/using the datastore directly/.test(add2.stderr) || notInfo(add2.stderr).length === 0, add2.stderr)
    quiet(await cni(pod2, 'DEL', conf), 'DEL without the agent')
    await assertGone(sb, pod2, [direct.v4])
  })

  describe('errors: CNI error on stdout, exit 1, nothing allocated, no host veth', () => {
    async function refused(sb: Sandbox, pod: Pod, p: Proc): Promise<ReturnType<typeof cniError>> {
      const e = cniError(p)
      await assertNothingAllocated(sb.db, 'after the failed ADD')
      assert.equal(linkExists(pod.hostVeth), false, 'no host veth')
      return e
    }

    it('bad netconf JSON → code 6', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const e = await refused(sb, pod, await cni(pod, 'ADD', sb.conf().slice(0, -5)))
      assert.equal(e.code, 6)
      assert.match(e.msg, /^error unmarshall network config: /)
      assert.deepEqual(podLinks(pod.ns), [])
    })

    for (const name of ['CNI_NETNS', 'CNI_IFNAME', 'CNI_CONTAINERID']) {
      it(`missing ${name} → code 4 naming it`, async (t) => {
        const sb = await sandbox()
        const pod = newPod(t)
        const e = await refused(sb, pod, await cni(pod, 'ADD', sb.conf(), {[name]: undefined}))
        assert.deepEqual([e.code, e.msg], [4, `required env variables [${name}] missing`])
      })
    }

    it('unknown CNI_ARGS key without IgnoreUnknown: refused by the main plugin (as calico) and by the IPAM plugin; DEL then succeeds', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t, {k8s: false, cniArgs: 'FOO=bar'})
      const e = await refused(sb, pod, await cni(pod, 'ADD', sb.conf()))
      assert.deepEqual([e.code, e.msg], [999, 'ARGS: unknown args ["FOO=bar"]'])
      assert.deepEqual(podLinks(pod.ns), [])
      // The runtime's DEL after the failed ADD must succeed (the plugin does not refuse the same args there).
      quiet(await cni(pod, 'DEL', sb.conf()), 'DEL after the refused ADD')
      // The IPAM plugin on its own refuses it the same way.
      const ipamConf = JSON.stringify({...sb.confObj(), type: 'ipamctl-ipam'})
      const ie = await refused(sb, pod, await exec(IPAM_BIN, pod.env('ADD'), ipamConf))
      assert.deepEqual([ie.code, ie.msg], [999, 'ARGS: unknown args ["FOO=bar"]'])
    })

    it('unknown CNI_ARGS key with IgnoreUnknown=1: accepted, and the known keys are used', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const args = `${pod.cniArgs};FOO=bar`
      const r = addResult(await cni(pod, 'ADD', sb.conf(), {CNI_ARGS: args}))
      const {v4} = await assertWired(sb, pod, r, {version: '1.0.0'})
      quiet(await cni(pod, 'DEL', sb.conf(), {CNI_ARGS: args}), 'DEL')
      await assertGone(sb, pod, [v4])
    })

    it('a netns path that does not exist → error before IPAM: nothing allocated', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const missing = `/var/run/netns/ipamctl-c-${RUN}-missing`
      const e = await refused(sb, pod, await cni(pod, 'ADD', sb.conf(), {CNI_NETNS: missing}))
      assert.deepEqual([e.code, e.msg], [999, `failed to open netns "${missing}": no such file or directory`])
      assert.equal((await storeState(sb.db)).blocks, 0, 'IPAM did not run (no block claimed)')
    })

    it('an interface name of 16 characters → code 4', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const e = await refused(sb, pod, await cni(pod, 'ADD', sb.conf(), {CNI_IFNAME: 'eth0123456789abc'}))
      assert.deepEqual(
        [e.code, e.msg, e.details],
        [4, 'interface name is too long', 'interface name should be less than 16 characters'],
      )
      assert.deepEqual(podLinks(pod.ns), [])
    })

    it('CNI_IFNAME already exists in the netns → error before IPAM (nothing allocated), the existing link is untouched', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      ip('-n', pod.ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0')
      const e = await refused(sb, pod, await cni(pod, 'ADD', sb.conf({ipam: {assign_ipv6: 'true'}})))
      assert.equal(e.msg, 'interface "eth0" already exists in the container network namespace')
      const st = await storeState(sb.db)
      assert.equal(st.blocks, 0, 'IPAM did not run')
      assert.deepEqual(podLinks(pod.ns).sort(), ['eth0', 'peer0'])
      assert.deepEqual(
        podAddrs(pod.ns).filter((a) => a.scope === 'global'),
        [],
      )
      quiet(await cni(pod, 'DEL', sb.conf()), 'DEL after the failed ADD')
    })
  })

  describe('delegation to host-local (exec on CNI_PATH)', {skip: SKIP_HOST_LOCAL}, () => {
    function hostLocalConf(sb: Sandbox, dataDir: string, version = '1.0.0'): Record<string, unknown> {
      return {
        ...sb.confObj({version}),
        name: 'hl-net',
        ipam: {type: 'host-local', ranges: [[{subnet: `10.197.${RUN_OCTET}.0/24`}]], dataDir},
      }
    }
    /** host-local's reservations: one file per address, named by it, holding the container ID. */
    const reservations = (dataDir: string): Record<string, string> => {
      const dir = path.join(dataDir, 'hl-net')
      if (!fs.existsSync(dir)) return {}
      return Object.fromEntries(
        fs
          .readdirSync(dir)
          .filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f))
          .map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8').split(/\r?\n/)[0]!]),
      )
    }

    it('ADD wires the pod with a host-local address; CHECK passes; DEL releases the reservation', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      const dataDir = path.join(sb.dir, 'host-local')
      const conf = hostLocalConf(sb, dataDir)
      const env = {CNI_PATH: HOST_LOCAL_DIR}
      const r = addResult(await cni(pod, 'ADD', JSON.stringify(conf), env))
      assert.equal(r.ips.length, 1)
      const v4 = addrOf(r.ips[0]!.address)
      assert.ok(v4.startsWith(`10.197.${RUN_OCTET}.`), `${v4} in 10.197.${RUN_OCTET}.0/24`)
      assert.deepEqual(r.ips[0], {address: `${v4}/32`, interface: 1})
      assert.deepEqual(reservations(dataDir), {[v4]: pod.cid})
      assert.deepEqual(
        podAddrs(pod.ns)
          .filter((a) => a.scope === 'global')
          .map((a) => `${a.local}/${a.prefixlen}`),
        [`${v4}/32`],
      )
      assert.deepEqual(
        hostRoutes(v4).map((x) => x.dev),
        [pod.hostVeth],
      )
      const wep = await withStore(sb.db, (s) => s.get(pod.wepKey))
      assert.deepEqual(wep && JSON.parse(wep.value).spec.ipNetworks, [`${v4}/32`], 'WorkloadEndpoint written')
      assert.equal((await storeState(sb.db)).blocks, 0, 'calico IPAM not used')
      quiet(await cni(pod, 'CHECK', JSON.stringify({...conf, prevResult: r}), env), 'CHECK')
      quiet(await cni(pod, 'DEL', JSON.stringify({...conf, prevResult: r}), env), 'DEL')
      assert.deepEqual(reservations(dataDir), {}, 'no host-local reservation left')
      await assertGone(sb, pod, [v4])
      quiet(await cni(pod, 'DEL', JSON.stringify(conf), env), 'second DEL')
    })

    it('kubelet-style CNI_ARGS without IgnoreUnknown reach host-local with IgnoreUnknown=1 prepended (as calico does)', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t, {cniArgs: undefined})
      const args = `K8S_POD_NAMESPACE=${pod.k8s!.namespace};K8S_POD_NAME=${pod.k8s!.name}`
      const dataDir = path.join(sb.dir, 'host-local')
      const conf = JSON.stringify(hostLocalConf(sb, dataDir))
      const env = {CNI_PATH: HOST_LOCAL_DIR, CNI_ARGS: args}
      const r = addResult(await cni(pod, 'ADD', conf, env))
      assert.equal(r.interfaces[0]!.name, pod.hostVeth)
      quiet(await cni(pod, 'DEL', conf, env), 'DEL')
      assert.deepEqual(reservations(dataDir), {})
      await assertGone(sb, pod, [addrOf(r.ips[0]!.address)])
    })

    it('an ADD refused because CNI_IFNAME exists does not run host-local', async (t) => {
      const sb = await sandbox()
      const pod = newPod(t)
      ip('-n', pod.ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0')
      const dataDir = path.join(sb.dir, 'host-local')
      const e = cniError(await cni(pod, 'ADD', JSON.stringify(hostLocalConf(sb, dataDir)), {CNI_PATH: HOST_LOCAL_DIR}))
      assert.equal(e.msg, 'interface "eth0" already exists in the container network namespace')
      assert.ok(!fs.existsSync(path.join(dataDir, 'hl-net', 'last_reserved_ip.0')), 'host-local was not run')
      assert.deepEqual(reservations(dataDir), {})
      assert.equal(linkExists(pod.hostVeth), false)
    })
  })

  describe('through libcni: cnitool add / check / del', {skip: SKIP_CNITOOL}, () => {
    async function cnitoolEnv(sb: Sandbox, version: string): Promise<Record<string, string>> {
      const confDir = path.join(sb.dir, 'net.d')
      const binDir = path.join(sb.dir, 'cni-bin')
      fs.mkdirSync(confDir)
      fs.mkdirSync(binDir)
      fs.symlinkSync(CNI_BIN, path.join(binDir, 'ipamctl-cni'))
      fs.symlinkSync(IPAM_BIN, path.join(binDir, 'ipamctl-ipam'))
      const {cniVersion: _v, name: _n, ...plugin} = sb.confObj({ipam: {assign_ipv6: 'true'}, extra: {mtu: 1450}})
      fs.writeFileSync(
        path.join(confDir, '10-ipamctl.conflist'),
        JSON.stringify({cniVersion: version, name: NET, plugins: [plugin]}),
      )
      return {NETCONFPATH: confDir, CNI_PATH: binDir, CNI_CACHE_DIR: path.join(sb.dir, 'cni-cache')}
    }

    for (const [version, k8s] of [
      ['1.0.0', true],
      ['0.4.0', false],
    ] as const) {
      it(`${version}${k8s ? ', kubelet-style CNI_ARGS' : ''}: add wires the pod, check passes and catches tampering, del cleans up`, async (t) => {
        const sb = await sandbox()
        const pod = newPod(t, {k8s})
        const env: Record<string, string> = {
          ...(await cnitoolEnv(sb, version)),
          ...(pod.cniArgs ? {CNI_ARGS: pod.cniArgs} : {}),
        }
        const tool = (cmd: string) => exec(CNITOOL, env, '', [cmd, NET, pod.netns])
        ok(await exec(CNITOOL, env, '', ['validate', NET]), 'cnitool validate')

        // cnitool derives the container ID from the netns path; the host veth name follows from it (non-k8s).
        const cid = `cnitool-${createHash('sha512').update(pod.netns).digest('hex').slice(0, 20)}`
        const hostVeth = k8s ? pod.hostVeth : `cali${createHash('sha1').update(cid).digest('hex').slice(0, 11)}`
        allLinks.add(hostVeth)
        t.after(() => tryIp('link', 'del', 'dev', hostVeth))
        const added = await tool('add')
        const r = addResult(added, 'cnitool add')
        assert.equal(r.cniVersion, version)
        assert.equal(r.interfaces[0]!.name, hostVeth)
        assert.equal(r.interfaces[1]!.sandbox, pod.netns)
        const [v4, v6] = r.ips.map((i) => addrOf(i.address))
        const globals = podAddrs(pod.ns)
          .filter((a) => a.scope === 'global')
          .map((a) => `${a.local}/${a.prefixlen}`)
        assert.deepEqual(globals, [`${v4}/32`, `${v6}/128`])
        assert.equal(ipLink('-n', pod.ns, 'link', 'show', 'dev', 'eth0').mtu, 1450)
        assert.deepEqual(
          hostRoutes(v4!).map((x) => x.dev),
          [hostVeth],
        )
        const cache = path.join(env.CNI_CACHE_DIR!, 'results', `${NET}-${cid}-eth0`)
        assert.ok(fs.existsSync(cache), 'libcni cached the result')
        const st = await storeState(sb.db)
        assert.deepEqual(st.handles, [keys.handle(`${NET}.${cid}`)])

        ok(await tool('check'), 'cnitool check')
        ip('-n', pod.ns, 'addr', 'del', `${v4}/32`, 'dev', 'eth0')
        const bad = await tool('check')
        assert.equal(bad.code, 1)
        assert.match(
          bad.stderr,
          new RegExp(`CHECK failed: address ${v4!.replace(/\./g, '\\.')}/32 missing on eth0 in the pod`),
        )

        ok(await tool('del'), 'cnitool del')
        assert.deepEqual(podLinks(pod.ns), [])
        assert.equal(linkExists(hostVeth), false)
        assert.deepEqual([hostRoutes(v4!), hostRoutes(v6!)], [[], []])
        assert.equal(fs.existsSync(cache), false, 'libcni dropped the cached result')
        await assertNothingAllocated(sb.db, 'after cnitool del')
        ok(await tool('del'), 'cnitool del again')
      })
    }
  })
})
