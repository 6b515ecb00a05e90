// Host veth naming and ownership with the REAL main plugin (`node bin/ipamctl-cni.cjs`) in real network namespaces:
// container IDs that share their first 11 characters (cnitool's `cnitool-<hex>`) get distinct host veths, an ADD
// never deletes a host veth another attachment owns, a DEL only deletes its own, and CNI GC removes the records and
// host veths of the attachments it collects. Needs root and `ip netns`; skipped with a reason otherwise. Every
// namespace and link a test makes is removed by its `after` hook and again by the file's.
import assert from 'node:assert/strict'
import {createHash, randomBytes} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it, type TestContext} from 'node:test'
import {putEndpoint} from '../../../src/lib/node-ipam/endpoint-record.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import {newWorkloadEndpoint, workloadEndpointName} from '../../../src/lib/workload/endpoint.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'
import {ip, ipJson, netnsSkipReason, tryIp, type IpLink, type IpLinkAddrs, type IpRoute} from '../../support/netns.ts'
import {type ProcResult, runProcess} from '../../support/process.ts'
import {withStore} from '../../support/store.ts'

const CNI_BIN = path.join(ROOT, 'bin', 'ipamctl-cni.cjs')
const NET = 'k8s-pod-network'
const NODE = 'node-1'
const RUN = randomBytes(3).toString('hex')
const RUN_OCTET = randomBytes(1)[0]!
const SKIP = netnsSkipReason(`ipamctl-o-${RUN}-probe`)
const allNs = new Set<string>()
const allLinks = new Set<string>()
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-veth-owner-'))

/** The host veth name of a non-Kubernetes attachment: cali + 11 hex chars of SHA-1(container ID). */
const vethOf = (cid: string): string => `cali${createHash('sha1').update(cid).digest('hex').slice(0, 11)}`
const k8sVethOf = (ns: string, pod: string): string =>
  `cali${createHash('sha1').update(`${ns}.${pod}`).digest('hex').slice(0, 11)}`
/** cnitool-style IDs: `cnitool-` + hex, here all sharing their first 20 characters. */
const cnitoolId = (tag: string): string => `cnitool-${RUN}abc${randomBytes(2).toString('hex')}`.slice(0, 20) + tag

const linkInfo = (name: string): IpLink | undefined => {
  try {
    return ipJson<IpLink[]>('-d', 'link', 'show', 'dev', name)[0]
  } catch {
    return undefined
  }
}
const podLinks = (ns: string): string[] =>
  ipJson<IpLink[]>('-n', ns, 'link', 'show')
    .map((l) => l.ifname)
    .filter((n) => n !== 'lo')
const podV4 = (ns: string): string[] =>
  ipJson<IpLinkAddrs[]>('-n', ns, '-4', 'addr', 'show', 'scope', 'global').flatMap((l) =>
    (l.addr_info ?? []).map((a) => a.local),
  )
const hostRouteDevs = (addr: string): (string | undefined)[] =>
  ipJson<IpRoute[]>('-4', 'route', 'show', 'table', 'all', `${addr}/32`).map((r) => r.dev)

interface Box {
  db: string
  conf(extra?: Record<string, unknown>): string
}
let boxes = 0
async function box(): Promise<Box> {
  const dir = path.join(tmp, `box${++boxes}`)
  fs.mkdirSync(dir)
  const db = path.join(dir, 'ipam.db')
  const store = SqliteStore.open(db)
  try {
    await createPools(makeCtx(store), [{name: 'test-ipv4', cidr: `10.196.${(RUN_OCTET + boxes) % 256}.0/24`}])
  } finally {
    await store.close()
  }
  const base = {
    cniVersion: '1.0.0',
    name: NET,
    type: 'ipamctl-cni',
    nodename: NODE,
    datastore_path: db,
    ipam_lock_file: path.join(dir, 'ipam.lock'),
    ipam: {type: 'ipamctl-ipam'},
  }
  return {db, conf: (extra = {}) => JSON.stringify({...base, ...extra})}
}

/** WorkloadEndpoint specs by container ID. */
interface WepSummary {
  interfaceName: string
  ipNetworks: string[]
  node: string
}
const records = (db: string): Promise<Record<string, WepSummary>> =>
  withStore(db, async (s) => {
    const out: Record<string, WepSummary> = {}
    for (const kv of await s.list(keys.resourcePrefix('workloadendpoints'))) {
      const spec = JSON.parse(kv.value).spec
      out[spec.containerID] = {interfaceName: spec.interfaceName, ipNetworks: spec.ipNetworks, node: spec.node}
    }
    return out
  })
const handles = (db: string): Promise<string[]> =>
  withStore(db, async (s) =>
    (await s.listKeys(keys.handlePrefix())).map((k) => k.slice(keys.handlePrefix().length)).sort(),
  )

let nsCount = 0
function newNs(t: TestContext): string {
  const ns = `ipamctl-o-${RUN}-${++nsCount}`
  ip('netns', 'add', ns)
  allNs.add(ns)
  ip('-n', ns, 'link', 'set', 'lo', 'up')
  t.after(() => tryIp('netns', 'del', ns))
  return ns
}
function track(t: TestContext, link: string): void {
  allLinks.add(link)
  t.after(() => tryIp('link', 'del', 'dev', link))
}

function cni(
  command: string,
  env: {cid?: string; ns?: string; args?: string; ifName?: string},
  stdin: string,
): Promise<ProcResult> {
  const clean: NodeJS.ProcessEnv = {
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    CNI_COMMAND: command,
    CNI_PATH: '/opt/cni/bin',
  }
  if (env.cid) clean.CNI_CONTAINERID = env.cid
  if (env.ns) clean.CNI_NETNS = `/var/run/netns/${env.ns}`
  if (env.cid) clean.CNI_IFNAME = env.ifName ?? 'eth0'
  if (env.args) clean.CNI_ARGS = env.args
  return runProcess(process.execPath, [CNI_BIN], {cwd: ROOT, env: clean, stdin})
}
function ok(p: ProcResult, what: string): void {
  assert.equal(p.code, 0, `${what} failed (${p.code}):\nstdout: ${p.stdout}\nstderr: ${p.stderr}`)
}
/** The address part of an `ip/len` result entry. */
const addrOf = (cidr: string): string => cidr.split('/')[0]!
interface AddResult {
  interfaces: {name: string}[]
  ips: {address: string}[]
}
function addResult(p: ProcResult, what: string): AddResult {
  ok(p, what)
  return JSON.parse(p.stdout)
}
function cniError(p: ProcResult): {code: number; msg: string} {
  assert.equal(p.code, 1, `expected exit 1, got ${p.code}: ${p.stdout}${p.stderr}`)
  return JSON.parse(p.stdout)
}
/** A veth pair on the host named `name` (peer `<name>p`), with `alias` if given. */
function foreignLink(t: TestContext, name: string, alias?: string): number {
  track(t, name)
  ip('link', 'add', name, 'type', 'veth', 'peer', 'name', `${name.slice(0, 14)}p`)
  if (alias) ip('link', 'set', 'dev', name, 'alias', alias)
  const link = linkInfo(name)
  assert.ok(link, `${name} was created`)
  return link.ifindex
}

describe('host veth names and ownership (ipamctl-cni in real network namespaces)', {skip: SKIP}, () => {
  before(() => ensureBuilt())
  after(() => {
    for (const l of allLinks) tryIp('link', 'del', 'dev', l)
    for (const n of allNs) tryIp('netns', 'del', n)
    fs.rmSync(tmp, {recursive: true, force: true})
  })

  it('two container IDs sharing their first 11 characters, added one after the other: both pods keep eth0, distinct host veths and records', async (t) => {
    const sb = await box()
    const ids = [cnitoolId('1'), cnitoolId('2')]
    assert.equal(ids[0]!.slice(0, 11), ids[1]!.slice(0, 11))
    const nss = ids.map(() => newNs(t))
    for (const c of ids) track(t, vethOf(c))
    track(t, `cali${ids[0]!.slice(0, 11)}`) // the name the old code gave both
    const addrs: string[] = []
    for (const [i, cid] of ids.entries()) {
      const r = addResult(await cni('ADD', {cid, ns: nss[i]}, sb.conf()), `ADD ${cid}`)
      assert.equal(r.interfaces[0]!.name, vethOf(cid))
      addrs.push(addrOf(r.ips[0]!.address))
    }
    assert.notEqual(vethOf(ids[0]!), vethOf(ids[1]!))
    const recs = await records(sb.db)
    for (const [i, cid] of ids.entries()) {
      assert.deepEqual(podLinks(nss[i]!), ['eth0'], `pod ${i} keeps its eth0`)
      assert.deepEqual(podV4(nss[i]!), [addrs[i]], `pod ${i} keeps its address`)
      const link = linkInfo(vethOf(cid))
      assert.ok(link, `host veth ${vethOf(cid)} exists`)
      assert.equal(link.ifalias, `ipamctl-cni:${cid}`, 'the host veth is marked as this attachment')
      assert.deepEqual(hostRouteDevs(addrs[i]!), [vethOf(cid)])
      assert.equal(recs[cid]?.interfaceName, vethOf(cid), `record of ${cid} names its own veth`)
    }
    // DEL of the first leaves the second alone.
    ok(await cni('DEL', {cid: ids[0], ns: nss[0]}, sb.conf()), 'DEL 0')
    assert.equal(linkInfo(vethOf(ids[0]!)), undefined)
    assert.deepEqual(podLinks(nss[1]!), ['eth0'])
    assert.deepEqual(hostRouteDevs(addrs[1]!), [vethOf(ids[1]!)])
    ok(await cni('DEL', {cid: ids[1], ns: nss[1]}, sb.conf()), 'DEL 1')
    assert.deepEqual(await handles(sb.db), [])
  })

  it('8 such IDs added in parallel (real processes): all succeed, 8 distinct veths and records, no interface vanished, no duplicate address', async (t) => {
    const sb = await box()
    const ids = Array.from({length: 8}, (_, i) => cnitoolId(String(i)))
    assert.equal(new Set(ids.map((c) => c.slice(0, 11))).size, 1)
    const nss = ids.map(() => newNs(t))
    for (const c of ids) track(t, vethOf(c))
    track(t, `cali${ids[0]!.slice(0, 11)}`)
    const conf = sb.conf()
    const results = await Promise.all(ids.map((cid, i) => cni('ADD', {cid, ns: nss[i]}, conf)))
    const addrs = results.map((p, i) => addrOf(addResult(p, `ADD ${i}`).ips[0]!.address))
    assert.equal(new Set(addrs).size, 8, `addresses: ${addrs.join(' ')}`)
    const recs = await records(sb.db)
    assert.equal(Object.keys(recs).length, 8)
    assert.equal(new Set(ids.map(vethOf)).size, 8)
    for (const [i, cid] of ids.entries()) {
      assert.deepEqual(podLinks(nss[i]!), ['eth0'], `pod ${i} keeps its eth0`)
      assert.deepEqual(podV4(nss[i]!), [addrs[i]])
      assert.equal(linkInfo(vethOf(cid))?.ifalias, `ipamctl-cni:${cid}`)
      assert.deepEqual(hostRouteDevs(addrs[i]!), [vethOf(cid)])
      assert.equal(recs[cid]?.interfaceName, vethOf(cid))
    }
    const dels = await Promise.all(ids.map((cid, i) => cni('DEL', {cid, ns: nss[i]}, conf)))
    for (const [i, d] of dels.entries()) ok(d, `DEL ${i}`)
    for (const cid of ids) assert.equal(linkInfo(vethOf(cid)), undefined)
    assert.deepEqual(await handles(sb.db), [])
  })

  it('ADD whose host veth name is held by another attachment (marked) or by something unmarked: refused, the link untouched, nothing allocated', async (t) => {
    const sb = await box()
    for (const alias of ['ipamctl-cni:some-other-container', undefined]) {
      const cid = cnitoolId(alias ? 'm' : 'u')
      const ns = newNs(t)
      const index = foreignLink(t, vethOf(cid), alias)
      const e = cniError(await cni('ADD', {cid, ns}, sb.conf()))
      assert.equal(e.code, 999)
      const owner = alias ? 'container some-other-container' : 'something other than ipamctl (it has no ipamctl marker)'
      assert.equal(
        e.msg,
        `interface "${vethOf(cid)}" already exists on the host and belongs to ${owner}; not replacing it`,
      )
      assert.equal(linkInfo(vethOf(cid))?.ifindex, index, 'the same link is still there')
      assert.deepEqual(podLinks(ns), [])
      assert.deepEqual(await handles(sb.db), [])
      assert.deepEqual(await records(sb.db), {})
      assert.equal((await withStore(sb.db, (s) => s.listKeys(keys.blockPrefix()))).length, 0, 'IPAM did not run')
    }
  })

  it('ADD replaces a leftover host veth of the same attachment (marked with its own container ID)', async (t) => {
    const sb = await box()
    const cid = cnitoolId('s')
    const ns = newNs(t)
    const old = foreignLink(t, vethOf(cid), `ipamctl-cni:${cid}`)
    const r = addResult(await cni('ADD', {cid, ns}, sb.conf()), 'ADD')
    const now = linkInfo(vethOf(cid))
    assert.ok(now, 'the host veth exists')
    assert.notEqual(now.ifindex, old, 'a new link')
    assert.equal(now.ifalias, `ipamctl-cni:${cid}`)
    assert.deepEqual(podV4(ns), [addrOf(r.ips[0]!.address)])
    ok(await cni('DEL', {cid, ns}, sb.conf()), 'DEL')
  })

  it('Kubernetes pod re-created with a new container ID: the new sandbox replaces the old veth (as upstream); DEL of the old sandbox leaves the new one alone', async (t) => {
    const sb = await box()
    const pod = `web-${RUN}`
    const args = `IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=${pod}`
    const veth = k8sVethOf('team-a', pod)
    track(t, veth)
    const [oldCid, newCid] = [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')]
    const [oldNs, newNs_] = [newNs(t), newNs(t)]
    ok(await cni('ADD', {cid: oldCid, ns: oldNs, args}, sb.conf()), 'ADD old')
    const r = addResult(await cni('ADD', {cid: newCid, ns: newNs_, args}, sb.conf()), 'ADD new')
    assert.equal(linkInfo(veth)?.ifalias, `ipamctl-cni:${newCid}`)
    ok(await cni('DEL', {cid: oldCid, ns: oldNs, args}, sb.conf()), 'DEL old')
    assert.equal(linkInfo(veth)?.ifalias, `ipamctl-cni:${newCid}`, 'the new sandbox keeps its veth')
    assert.deepEqual(podV4(newNs_), [addrOf(r.ips[0]!.address)])
    assert.deepEqual(Object.keys(await records(sb.db)), [newCid])
    ok(await cni('DEL', {cid: newCid, ns: newNs_, args}, sb.conf()), 'DEL new')
    assert.equal(linkInfo(veth), undefined)
  })

  it('DEL without a netns deletes no host veth marked for another container, neither by its computed name nor by the one its record names', async (t) => {
    const sb = await box()
    const cid = cnitoolId('d')
    // The name an older ipamctl gave this attachment (cali + its first 11 characters), now another attachment's.
    const legacy = `cali${cid.slice(0, 11)}`
    const byName = foreignLink(t, vethOf(cid), 'ipamctl-cni:the-live-one')
    const byRecord = foreignLink(t, legacy, 'ipamctl-cni:the-live-one')
    await withStore(sb.db, (s) =>
      putEndpoint(
        s,
        newWorkloadEndpoint(
          {
            name: workloadEndpointName({node: NODE, orchestrator: 'cni', containerId: cid, ifName: 'eth0'}),
            namespace: 'default',
            orchestrator: 'cni',
            node: NODE,
            containerID: cid,
            endpoint: 'eth0',
            ipNetworks: [],
            interfaceName: legacy,
            network: NET,
          },
          new Date(),
        ),
      ),
    )
    const p = await cni('DEL', {cid}, sb.conf())
    ok(p, 'DEL')
    assert.equal(
      linkInfo(legacy)?.ifindex,
      byRecord,
      'the link the record names stays: it is marked for another container',
    )
    assert.match(p.stderr, new RegExp(`host interface ${legacy} belongs to another attachment; left in place`))
    assert.equal(linkInfo(vethOf(cid))?.ifindex, byName)
    assert.deepEqual(await records(sb.db), {}, 'the record of this attachment is gone')
  })

  it('a pod wired before these names (unmarked host veth, cali + first 11 characters, named in its record): CHECK finds it, DEL without a netns removes it', async (t) => {
    const sb = await box()
    const cid = cnitoolId('l')
    const legacy = `cali${cid.slice(0, 11)}`
    const ns = newNs(t)
    track(t, vethOf(cid))
    track(t, legacy)
    const r = addResult(await cni('ADD', {cid, ns}, sb.conf()), 'ADD')
    // Make it look as an older ipamctl left it: the old name, no marker, and the record naming it.
    ip('link', 'set', 'dev', vethOf(cid), 'down')
    ip('link', 'set', 'dev', vethOf(cid), 'name', legacy)
    ip('link', 'set', 'dev', legacy, 'alias', '')
    ip('link', 'set', 'dev', legacy, 'up')
    const v4 = addrOf(r.ips[0]!.address)
    ip('route', 'replace', `${v4}/32`, 'dev', legacy, 'scope', 'link')
    await withStore(sb.db, async (s) => {
      const [kv] = await s.list(keys.resourcePrefix('workloadendpoints'))
      const doc = JSON.parse(kv!.value)
      doc.spec.interfaceName = legacy
      await s.txn([], [{put: kv!.key, value: JSON.stringify(doc)}])
    })
    assert.equal(linkInfo(legacy)?.ifalias, undefined)
    const check = await cni('CHECK', {cid, ns}, JSON.stringify({...JSON.parse(sb.conf()), prevResult: r}))
    assert.deepEqual([check.code, check.stdout], [0, ''], check.stderr)
    ok(await cni('DEL', {cid}, sb.conf()), 'DEL without CNI_NETNS')
    assert.equal(linkInfo(legacy), undefined, "the record names it: it was this attachment's")
    assert.deepEqual(podLinks(ns), [], 'the pod end went with it')
    assert.deepEqual(await records(sb.db), {})
  })

  it('GC deletes the records and host veths of the attachments it collects, and nothing else', async (t) => {
    const sb = await box()
    const [keep, drop, taken] = [cnitoolId('k'), cnitoolId('x'), cnitoolId('t')]
    const nss: Record<string, string> = {}
    const addrs: Record<string, string> = {}
    for (const cid of [keep, drop, taken]) {
      nss[cid] = newNs(t)
      track(t, vethOf(cid))
      addrs[cid] = addrOf(addResult(await cni('ADD', {cid, ns: nss[cid]}, sb.conf()), `ADD ${cid}`).ips[0]!.address)
    }
    // `taken`'s veth now claims to be another attachment's: GC must not delete it.
    ip('link', 'set', 'dev', vethOf(taken), 'alias', 'ipamctl-cni:someone-else')
    // A record of another node, and one of another network, for containers that are not valid here either.
    await withStore(sb.db, async (s) => {
      for (const [node, network, name] of [
        ['node-2', NET, 'n2'],
        [NODE, 'other-net', 'on'],
      ] as const) {
        const w = newWorkloadEndpoint(
          {
            name: `${node}-cni-${name}-eth0`,
            namespace: 'default',
            orchestrator: 'cni',
            node,
            containerID: `${name}-${RUN}`,
            endpoint: 'eth0',
            ipNetworks: ['10.9.9.9/32'],
            interfaceName: 'calinotours0',
            network,
          },
          new Date(),
        )
        await putEndpoint(s, w)
      }
    })
    const gcConf = sb.conf({cniVersion: '1.1.0', 'cni.dev/valid-attachments': [{containerID: keep, ifname: 'eth0'}]})
    const p = await cni('GC', {}, gcConf)
    assert.deepEqual([p.code, p.stdout], [0, ''], p.stderr)
    const recs = await records(sb.db)
    assert.deepEqual(
      Object.keys(recs).sort(),
      [keep, `n2-${RUN}`, `on-${RUN}`].sort(),
      'only the collected attachments lost their records',
    )
    assert.deepEqual(await handles(sb.db), [`${NET}.${keep}`])
    assert.equal(linkInfo(vethOf(drop)), undefined, 'the collected attachment lost its host veth')
    assert.deepEqual(podLinks(nss[drop]!), [], 'and with it the pod end')
    assert.ok(linkInfo(vethOf(taken)), 'a veth marked for another attachment stays')
    assert.deepEqual(podLinks(nss[keep]!), ['eth0'])
    assert.deepEqual(hostRouteDevs(addrs[keep]!), [vethOf(keep)])
    ok(await cni('DEL', {cid: keep, ns: nss[keep]}, sb.conf()), 'DEL keep')
  })
})
