// Real kernel objects: network namespaces made with `ip netns add`, veths made by wirePod, checked with `ip -j`.
// Needs root and iproute2; skipped otherwise. Every namespace, veth and route it makes is named from one random
// run id and removed in `after`, also when a test fails. Pod addresses come from 10.199.<run>.x and
// fd00:199::<run>:x, routed only on the test's own veths.
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {readFileSync, writeFileSync, rmSync, statSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
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
  type IpNeigh,
  type IpRoute,
} from '../../support/netns.ts'

type Veth = typeof import('../../../src/lib/dataplane/veth.ts')
type PodCheck = typeof import('../../../src/lib/dataplane/check.ts')
type Netns = typeof import('../../../src/lib/dataplane/netns.ts')
type Errors = typeof import('../../../src/lib/dataplane/errors.ts')
type BaseErrors = typeof import('../../../src/lib/errors.ts')

const RUN = randomBytes(3).toString('hex')
const RUN_OCTET = randomBytes(1)[0]!
const nsNames = new Set<string>()
const hostLinks = new Set<string>()

const SKIP = netnsSkipReason(`ipamctl-t-${RUN}-probe`)

let seq = 0
/** A fresh named netns with lo up; deleted in `after`. */
function newNs(): {name: string; path: string} {
  const name = `ipamctl-t-${RUN}-${++seq}`
  ip('netns', 'add', name)
  nsNames.add(name)
  ip('-n', name, 'link', 'set', 'lo', 'up')
  return {name, path: `/var/run/netns/${name}`}
}
function hostName(tag: string): string {
  const name = `ipt${RUN}${tag}` // ≤ 15 chars
  hostLinks.add(name)
  return name
}
const v4 = (n: number): string => `10.199.${RUN_OCTET}.${n}`
const v6 = (n: number): string => `fd00:199::${RUN_OCTET.toString(16)}:${n.toString(16)}`

function hostLinkExists(name: string): boolean {
  try {
    ip('link', 'show', 'dev', name)
    return true
  } catch {
    return false
  }
}
const hostRoutes = (dst: string, family: '-4' | '-6' = '-4') =>
  ipJson<IpRoute[]>(family, 'route', 'show', 'table', 'all', dst)
/** Global-scope addresses of every link in a netns. */
const globalAddrs = (ns: string): string[] =>
  ipJson<IpLinkAddrs[]>('-n', ns, 'addr', 'show', 'scope', 'global')
    .flatMap((l) => (l.addr_info ?? []).map((a) => a.local))
    .filter((a) => a !== undefined)
const sysctl = (key: string, ns?: string): string =>
  (ns
    ? execFileSync('ip', ['netns', 'exec', ns, 'cat', `/proc/sys/${key.replaceAll('.', '/')}`], {encoding: 'utf8'})
    : readFileSync(`/proc/sys/${key.replaceAll('.', '/')}`, 'utf8')
  ).trim()

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b)
  return `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, min ${sorted[0]!.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`
}

async function waitFor(cond: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (cond()) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return cond()
}

describe('dataplane: wirePod / unwirePod / checkPod in real network namespaces', {skip: SKIP}, () => {
  let veth: Veth
  let podCheck: PodCheck
  let netns: Netns
  let errors: Errors
  let base: BaseErrors
  const timings: number[] = []

  before(async () => {
    veth = await import('../../../src/lib/dataplane/veth.ts')
    podCheck = await import('../../../src/lib/dataplane/check.ts')
    netns = await import('../../../src/lib/dataplane/netns.ts')
    errors = await import('../../../src/lib/dataplane/errors.ts')
    base = await import('../../../src/lib/errors.ts')
  })

  after(() => {
    for (const name of hostLinks) tryIp('link', 'del', 'dev', name)
    for (const name of nsNames) tryIp('netns', 'del', name)
    if (timings.length)
      console.log(`wirePod timing over the other tests (${timings.length} calls): ${summary(timings)}`)
  })

  async function timedWire(req: Parameters<Veth['wirePod']>[0]) {
    const t0 = performance.now()
    const res = await veth.wirePod(req)
    timings.push(performance.now() - t0)
    return res
  }

  describe('netns helpers', () => {
    test('netnsPath: bare name → /var/run/netns/<name>, paths unchanged', () => {
      assert.equal(netns.netnsPath('pod-1'), '/var/run/netns/pod-1')
      assert.equal(netns.netnsPath('/proc/123/ns/net'), '/proc/123/ns/net')
    })

    test('inNetns runs inside the pod (sysctl writes land there) and returns to the host netns', () => {
      const ns = newNs()
      const before = statSync('/proc/thread-self/ns/net').ino
      const hostForward = sysctl('net.ipv4.ip_forward')
      const inside = netns.inNetns(ns.name, () => {
        writeFileSync('/proc/sys/net/ipv4/ip_forward', hostForward === '1' ? '0' : '1')
        return {ino: statSync('/proc/thread-self/ns/net').ino, links: readFileSync('/proc/net/dev', 'utf8')}
      })
      assert.notEqual(inside.ino, before)
      assert.equal(statSync('/proc/thread-self/ns/net').ino, before)
      assert.equal(sysctl('net.ipv4.ip_forward'), hostForward, 'host value untouched')
      assert.equal(sysctl('net.ipv4.ip_forward', ns.name), hostForward === '1' ? '0' : '1', 'pod value changed')
    })

    test('inNetns rejects an async callback and still switches back', () => {
      const ns = newNs()
      const before = statSync('/proc/thread-self/ns/net').ino
      assert.throws(() => netns.inNetns(ns.path, (async () => 1) as () => unknown), TypeError)
      assert.equal(statSync('/proc/thread-self/ns/net').ino, before)
    })

    test('missing path or a file that is not a netns → NetnsNotFoundError (a NotFoundError)', () => {
      assert.throws(() => netns.inNetns(`ipamctl-t-${RUN}-missing`, () => 1), errors.NetnsNotFoundError)
      const file = join(tmpdir(), `ipamctl-t-${RUN}-notns`)
      writeFileSync(file, '')
      try {
        assert.throws(
          () => netns.inNetns(file, () => 1),
          (e: unknown) =>
            e instanceof errors.NetnsNotFoundError &&
            e instanceof base.NotFoundError &&
            /not a network namespace/.test(e.message),
        )
      } finally {
        rmSync(file, {force: true})
      }
    })
  })

  test('dual-stack pod: link, addresses, routes, neighbour, MACs, sysctls, host routes, TCP; CHECK; DEL', async (t) => {
    const ns = newNs()
    const hostIf = hostName('a')
    const req = {netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(1), ipv6: v6(1), mtu: 1400}
    const res = await timedWire(req)

    assert.equal(res.hostIfName, hostIf)
    assert.equal(res.hostMac, 'ee:ee:ee:ee:ee:ee')
    assert.equal(res.podIfName, 'eth0')
    assert.equal(res.mtu, 1400)
    assert.equal(res.sandbox, ns.path)
    assert.deepEqual(res.warnings, [])

    // pod link and addresses
    const podLink = ipLink<IpLinkAddrs>('-n', ns.name, 'addr', 'show', 'dev', 'eth0')
    assert.ok(podLink.flags.includes('UP'), 'pod link up')
    assert.equal(podLink.mtu, 1400)
    assert.equal(podLink.address, res.podMac)
    const global = podLink.addr_info.filter((a) => a.scope === 'global').map((a) => `${a.local}/${a.prefixlen}`)
    assert.deepEqual(global.sort(), [`${v4(1)}/32`, `${v6(1)}/128`].sort())

    // pod routes, exactly Calico's layout
    const routes4 = ipJson<IpRoute[]>('-n', ns.name, '-4', 'route', 'show').map((r) => ({
      dst: r.dst,
      gateway: r.gateway,
      dev: r.dev,
      scope: r.scope,
    }))
    assert.deepEqual(routes4, [
      {dst: 'default', gateway: '169.254.1.1', dev: 'eth0', scope: undefined},
      {dst: '169.254.1.1', gateway: undefined, dev: 'eth0', scope: 'link'},
    ])
    const default6 = ipJson<IpRoute[]>('-n', ns.name, '-6', 'route', 'show', 'default')
    assert.deepEqual(
      default6.map((r) => ({gateway: r.gateway, dev: r.dev})),
      [{gateway: 'fe80::ecee:eeff:feee:eeee', dev: 'eth0'}],
    )
    const neigh = ipJson<IpNeigh[]>('-n', ns.name, 'neigh', 'show', '169.254.1.1')
    assert.deepEqual(
      neigh.map((n) => ({dev: n.dev, lladdr: n.lladdr, state: n.state})),
      [{dev: 'eth0', lladdr: 'ee:ee:ee:ee:ee:ee', state: ['PERMANENT']}],
    )

    // host veth
    const hostLink = ipLink<IpLinkAddrs>('addr', 'show', 'dev', hostIf)
    assert.equal(hostLink.address, 'ee:ee:ee:ee:ee:ee')
    assert.equal(hostLink.mtu, 1400)
    assert.ok(hostLink.flags.includes('UP'), 'host link up')
    assert.ok(hostLink.addr_info.some((a) => a.local === 'fe80::ecee:eeff:feee:eeee'))
    assert.deepEqual(
      hostRoutes(`${v4(1)}/32`).map((r) => ({dst: r.dst, dev: r.dev, scope: r.scope})),
      [{dst: v4(1), dev: hostIf, scope: 'link'}],
    )
    assert.deepEqual(
      hostRoutes(`${v6(1)}/128`, '-6')
        .filter((r) => !r.table || r.table === 'main')
        .map((r) => ({dst: r.dst, dev: r.dev})),
      [{dst: v6(1), dev: hostIf}],
    )

    // sysctls
    for (const [key, want] of [
      [`net.ipv4.conf.${hostIf}.route_localnet`, '1'],
      [`net.ipv4.conf.${hostIf}.proxy_arp`, '1'],
      [`net.ipv4.conf.${hostIf}.forwarding`, '1'],
      [`net.ipv4.neigh.${hostIf}.proxy_delay`, '0'],
      [`net.ipv6.conf.${hostIf}.accept_dad`, '0'],
      [`net.ipv6.conf.${hostIf}.disable_ipv6`, '0'],
      [`net.ipv6.conf.${hostIf}.proxy_ndp`, '1'],
      [`net.ipv6.conf.${hostIf}.forwarding`, '1'],
      [`net.ipv6.conf.${hostIf}.accept_ra`, '0'],
    ] as const) {
      assert.equal(sysctl(key), want, key)
    }
    for (const [key, want] of [
      ['net.ipv6.conf.eth0.accept_dad', '0'],
      ['net.ipv6.conf.all.disable_ipv6', '0'],
      ['net.ipv6.conf.default.disable_ipv6', '0'],
      ['net.ipv6.conf.lo.disable_ipv6', '0'],
      ['net.ipv4.ip_forward', '0'],
      ['net.ipv6.conf.all.forwarding', '0'],
    ] as const) {
      assert.equal(sysctl(key, ns.name), want, `pod ${key}`)
    }

    await t.test('host reaches a TCP listener in the pod over the veth (IPv4 and IPv6)', async () => {
      const listener = await listenInNetns(ns.name, '::', 17999)
      try {
        assert.equal(await tcpExchange(v4(1), 17999), 'pong')
        assert.equal(await tcpExchange(v6(1), 17999), 'pong')
      } finally {
        listener.kill()
      }
    })

    await t.test('checkPod passes right after wirePod and reports tampering', async () => {
      await podCheck.checkPod(req)
      // (Deleting the only IPv4 address would make the kernel flush the pod's IPv4 routes too, so tamper with v6.)
      ip('-n', ns.name, 'addr', 'del', `${v6(1)}/128`, 'dev', 'eth0')
      await assert.rejects(
        podCheck.checkPod(req),
        (e: unknown) => e instanceof errors.PodCheckError && e.mismatch === 'pod-address-missing',
      )
      ip('-n', ns.name, 'addr', 'add', `${v6(1)}/128`, 'dev', 'eth0', 'nodad')
      ip('-n', ns.name, 'route', 'del', 'default')
      await assert.rejects(
        podCheck.checkPod(req),
        (e: unknown) => e instanceof errors.PodCheckError && e.mismatch === 'pod-route-missing',
      )
      ip('-n', ns.name, 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0')
      await podCheck.checkPod(req)
      ip('route', 'del', `${v6(1)}/128`, 'dev', hostIf)
      await assert.rejects(
        podCheck.checkPod(req),
        (e: unknown) => e instanceof errors.PodCheckError && e.mismatch === 'host-route-missing',
      )
      ip('-6', 'route', 'add', `${v6(1)}/128`, 'dev', hostIf)
      ip('-n', ns.name, 'link', 'set', 'eth0', 'down')
      await assert.rejects(
        podCheck.checkPod(req),
        (e: unknown) => e instanceof errors.PodCheckError && e.mismatch === 'pod-link-down',
      )
    })

    await t.test('unwirePod removes link, addresses and host routes; a second call succeeds', async () => {
      await veth.unwirePod(req)
      assert.equal(hostLinkExists(hostIf), false)
      assert.deepEqual(ipJson<IpLink[]>('-n', ns.name, 'link', 'show', 'type', 'veth'), [])
      assert.deepEqual(globalAddrs(ns.name), [])
      assert.deepEqual(hostRoutes(`${v4(1)}/32`), [])
      assert.deepEqual(hostRoutes(`${v6(1)}/128`, '-6'), [])
      await veth.unwirePod(req)
      await assert.rejects(
        podCheck.checkPod(req),
        (e: unknown) => e instanceof errors.PodCheckError && e.mismatch === 'pod-link-missing',
      )
    })
  })

  test('IPv4-only pod, kernel MTU, fixed pod MAC, allowIpForwarding', async () => {
    const ns = newNs()
    const hostIf = hostName('b')
    const res = await timedWire({
      netns: ns.name,
      ifName: 'net1',
      hostIfName: hostIf,
      ipv4: v4(2),
      allowIpForwarding: true,
      podMac: '0a:58:0a:c7:00:02',
    })
    assert.equal(res.podMac, '0a:58:0a:c7:00:02')
    assert.equal(res.mtu, 1500)
    assert.equal(res.sandbox, ns.name)
    const podLink = ipLink('-n', ns.name, 'link', 'show', 'dev', 'net1')
    assert.equal(podLink.address, '0a:58:0a:c7:00:02')
    assert.equal(sysctl('net.ipv4.ip_forward', ns.name), '1')
    assert.deepEqual(ipJson<IpRoute[]>('-n', ns.name, '-6', 'route', 'show', 'default'), [])
    assert.equal(sysctl(`net.ipv4.conf.${hostIf}.proxy_arp`), '1')
    await podCheck.checkPod({
      netns: ns.name,
      ifName: 'net1',
      hostIfName: hostIf,
      ipv4: v4(2),
      podMac: '0a:58:0a:c7:00:02',
    })
    await veth.unwirePod({netns: ns.name, ifName: 'net1', hostIfName: hostIf, ipv4: v4(2)})
    assert.equal(hostLinkExists(hostIf), false)
  })

  test('unwirePod with the netns deleted, and with no netns given, succeeds and leaves nothing', async () => {
    const a = newNs()
    const hostA = hostName('c')
    await timedWire({netns: a.path, ifName: 'eth0', hostIfName: hostA, ipv4: v4(3)})
    ip('netns', 'del', a.name)
    nsNames.delete(a.name)
    await veth.unwirePod({netns: a.path, ifName: 'eth0', hostIfName: hostA, ipv4: v4(3)})
    await veth.unwirePod({netns: a.path, ifName: 'eth0', hostIfName: hostA, ipv4: v4(3)})
    assert.ok(await waitFor(() => !hostLinkExists(hostA)), 'host veth gone')
    assert.deepEqual(hostRoutes(`${v4(3)}/32`), [])

    const b = newNs()
    const hostB = hostName('d')
    await timedWire({netns: b.path, ifName: 'eth0', hostIfName: hostB, ipv4: v4(4)})
    await veth.unwirePod({ifName: 'eth0', hostIfName: hostB, ipv4: v4(4)})
    assert.equal(hostLinkExists(hostB), false)
    assert.deepEqual(ipJson<IpLink[]>('-n', b.name, 'link', 'show', 'dev', 'lo').length, 1)
    assert.deepEqual(ipJson<IpLink[]>('-n', b.name, 'link', 'show', 'type', 'veth'), [])
    assert.deepEqual(hostRoutes(`${v4(4)}/32`), [])
  })

  test('wirePod into a non-existent netns → NetnsNotFoundError, nothing created', async () => {
    const hostIf = hostName('e')
    await assert.rejects(
      veth.wirePod({netns: `/var/run/netns/ipamctl-t-${RUN}-nope`, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(5)}),
      (e: unknown) => e instanceof errors.NetnsNotFoundError && e instanceof base.NotFoundError,
    )
    assert.equal(hostLinkExists(hostIf), false)
    assert.deepEqual(hostRoutes(`${v4(5)}/32`), [])
  })

  test('invalid names and addresses are ValidationErrors before anything is touched', async () => {
    const ns = newNs()
    await assert.rejects(
      veth.wirePod({netns: ns.path, ifName: 'eth0/1', hostIfName: hostName('f'), ipv4: v4(6)}),
      errors.InvalidInterfaceNameError,
    )
    await assert.rejects(
      veth.wirePod({netns: ns.path, ifName: 'eth0', hostIfName: 'cali0123456789abcdef', ipv4: v4(6)}),
      base.ValidationError,
    )
    await assert.rejects(
      veth.wirePod({netns: ns.path, ifName: 'eth0', hostIfName: hostName('f'), ipv4: v6(6)}),
      errors.InvalidWireRequestError,
    )
    assert.deepEqual(ipJson<IpLink[]>('-n', ns.name, 'link', 'show', 'type', 'veth'), [])
  })

  test('CNI_IFNAME already present in the pod → InterfaceExistsError, nothing left behind', async () => {
    const ns = newNs()
    ip('-n', ns.name, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'other0')
    const hostIf = hostName('g')
    await assert.rejects(
      veth.wirePod({netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(7)}),
      (e: unknown) =>
        e instanceof errors.InterfaceExistsError &&
        e instanceof base.ConflictError &&
        /already exists/.test((e as Error).message),
    )
    assert.equal(hostLinkExists(hostIf), false)
    assert.deepEqual(hostRoutes(`${v4(7)}/32`), [])
    const names = ipJson<IpLink[]>('-n', ns.name, 'link', 'show')
      .map((l) => l.ifname)
      .sort()
    assert.deepEqual(names, ['eth0', 'lo', 'other0'])
    assert.deepEqual(globalAddrs(ns.name), [])
  })

  test('host route to the pod IP on another link → RouteConflictError with the upstream message, nothing left behind', async () => {
    const ns = newNs()
    const other = hostName('x0')
    hostLinks.add(`${other}p`)
    ip('link', 'add', other, 'type', 'veth', 'peer', 'name', `${other}p`)
    ip('link', 'set', other, 'up')
    ip('route', 'add', `${v4(200)}/32`, 'dev', other)
    const otherIndex = ipLink('link', 'show', 'dev', other).ifindex
    const hostIf = hostName('h')
    await assert.rejects(
      veth.wirePod({netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(200)}),
      (e: unknown) => {
        assert.ok(e instanceof errors.RouteConflictError, String(e))
        assert.ok(e instanceof base.ConflictError)
        const dst = `${v4(200)}/32`.replaceAll('.', '\\.')
        assert.match(
          e.message,
          new RegExp(
            `^route \\(Ifindex: \\d+, Dst: ${dst}, Scope: 253\\) already exists for an interface other than '${hostIf}': route \\(Ifindex: ${otherIndex}, Dst: ${dst}, Scope: 253, Iface: ${other}\\)$`,
          ),
        )
        return true
      },
    )
    assert.equal(hostLinkExists(hostIf), false)
    assert.deepEqual(ipJson<IpLink[]>('-n', ns.name, 'link', 'show', 'type', 'veth'), [])
    assert.deepEqual(
      hostRoutes(`${v4(200)}/32`).map((r) => r.dev),
      [other],
      'the other link keeps its route',
    )
  })

  test('dual-stack pod whose IPv6 host route conflicts: the IPv4 host route already added is rolled back too', async () => {
    const ns = newNs()
    const other = hostName('x1')
    hostLinks.add(`${other}p`)
    ip('link', 'add', other, 'type', 'veth', 'peer', 'name', `${other}p`)
    ip('link', 'set', other, 'up')
    ip('-6', 'route', 'add', `${v6(201)}/128`, 'dev', other)
    const hostIf = hostName('j')
    await assert.rejects(
      veth.wirePod({netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(201), ipv6: v6(201)}),
      (e: unknown) =>
        e instanceof errors.RouteConflictError &&
        e.message.includes(`Dst: ${v6(201)}/128, Scope: 253) already exists for an interface other than '${hostIf}'`),
    )
    assert.equal(hostLinkExists(hostIf), false)
    assert.deepEqual(hostRoutes(`${v4(201)}/32`), [])
    assert.deepEqual(ipJson<IpLink[]>('-n', ns.name, 'link', 'show', 'type', 'veth'), [])
    assert.deepEqual(
      hostRoutes(`${v6(201)}/128`, '-6').map((r) => r.dev),
      [other],
    )
  })

  test('an existing host link with the veth name: replaced only if marked as the same owner (or replaceOtherOwner); otherwise InterfaceExistsError and untouched', async () => {
    const alias = (name: string): string | undefined => ipLink('-d', 'link', 'show', 'dev', name).ifalias
    const index = (name: string): number => ipLink('link', 'show', 'dev', name).ifindex
    const pair = (name: string, mark?: string) => {
      hostLinks.add(`${name}p`)
      ip('link', 'add', name, 'type', 'veth', 'peer', 'name', `${name}p`)
      if (mark) ip('link', 'set', 'dev', name, 'alias', mark)
    }
    // Another owner's, and an unmarked one: refused, the link stays as it was.
    for (const [tag, mark] of [
      ['io', 'ipamctl-cni:other'],
      ['iu', undefined],
    ] as const) {
      const ns = newNs()
      const hostIf = hostName(tag)
      pair(hostIf, mark)
      const before = index(hostIf)
      await assert.rejects(
        veth.wirePod({netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(8), owner: 'me'}),
        (e: unknown) =>
          e instanceof errors.InterfaceExistsError &&
          /already exists on the host and belongs to/.test((e as Error).message),
      )
      await assert.rejects(
        veth.checkHostLinkReplaceable({hostIfName: hostIf, owner: 'me'}),
        errors.InterfaceExistsError,
      )
      assert.equal(index(hostIf), before, 'untouched')
      assert.deepEqual(ipJson<IpLink[]>('-n', ns.name, 'link', 'show', 'type', 'veth'), [])
      // unwirePod by name leaves it too: it is not this owner's.
      assert.equal(
        await veth.unwirePod({ifName: 'eth0', hostIfName: hostIf, owner: 'me', claimUnmarked: false}),
        'not-ours',
      )
      assert.equal(index(hostIf), before)
    }
    // The same owner's leftover: replaced, and the new link is marked.
    {
      const ns = newNs()
      const hostIf = hostName('is')
      pair(hostIf, 'ipamctl-cni:me')
      await veth.checkHostLinkReplaceable({hostIfName: hostIf, owner: 'me'})
      await timedWire({netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(8), owner: 'me'})
      assert.equal(hostLinkExists(`${hostIf}p`), false, 'the stale pair is gone')
      assert.equal(ipLink('link', 'show', 'dev', hostIf).address, 'ee:ee:ee:ee:ee:ee')
      assert.equal(alias(hostIf), 'ipamctl-cni:me')
      assert.equal(
        await veth.unwirePod({ifName: 'eth0', hostIfName: hostIf, ipv4: v4(8), owner: 'me', claimUnmarked: false}),
        'deleted',
      )
      assert.equal(hostLinkExists(hostIf), false)
    }
    // replaceOtherOwner (Kubernetes names): another owner's link is replaced.
    {
      const ns = newNs()
      const hostIf = hostName('ik')
      pair(hostIf, 'ipamctl-cni:old-sandbox')
      await timedWire({
        netns: ns.path,
        ifName: 'eth0',
        hostIfName: hostIf,
        ipv4: v4(9),
        owner: 'new-sandbox',
        replaceOtherOwner: true,
      })
      assert.equal(hostLinkExists(`${hostIf}p`), false)
      assert.equal(alias(hostIf), 'ipamctl-cni:new-sandbox')
      await veth.unwirePod({netns: ns.path, ifName: 'eth0', hostIfName: hostIf, ipv4: v4(9), owner: 'new-sandbox'})
    }
  })

  test('20 pods wired in parallel all succeed, then unwired in parallel', async (t) => {
    const pods = Array.from({length: 20}, (_, i) => ({
      ns: newNs(),
      hostIfName: hostName(`p${i}`),
      ipv4: v4(100 + i),
      ipv6: v6(100 + i),
    }))
    const t0 = performance.now()
    const results = await Promise.all(
      pods.map((p) =>
        veth.wirePod({netns: p.ns.path, ifName: 'eth0', hostIfName: p.hostIfName, ipv4: p.ipv4, ipv6: p.ipv6}),
      ),
    )
    const elapsed = performance.now() - t0
    t.diagnostic(
      `20 dual-stack pods wired in parallel in ${elapsed.toFixed(0)} ms (${(elapsed / 20).toFixed(1)} ms/pod)`,
    )
    assert.equal(results.length, 20)
    const routes = ipJson<IpRoute[]>('-4', 'route', 'show')
    for (const [i, p] of pods.entries()) {
      assert.equal(results[i]!.hostMac, 'ee:ee:ee:ee:ee:ee')
      assert.ok(
        routes.some((r) => r.dst === p.ipv4 && r.dev === p.hostIfName && r.scope === 'link'),
        `host route for ${p.ipv4}`,
      )
      assert.deepEqual(globalAddrs(p.ns.name).sort(), [p.ipv4, p.ipv6].sort())
    }
    await Promise.all(
      pods.map((p) =>
        podCheck.checkPod({netns: p.ns.path, ifName: 'eth0', hostIfName: p.hostIfName, ipv4: p.ipv4, ipv6: p.ipv6}),
      ),
    )
    await Promise.all(
      pods.map((p) =>
        veth.unwirePod({netns: p.ns.path, ifName: 'eth0', hostIfName: p.hostIfName, ipv4: p.ipv4, ipv6: p.ipv6}),
      ),
    )
    for (const p of pods) assert.equal(hostLinkExists(p.hostIfName), false)
    const left = ipJson<IpRoute[]>('-4', 'route', 'show').map((r) => r.dst)
    assert.deepEqual(
      pods.filter((p) => left.includes(p.ipv4)),
      [],
      'no host route left',
    )
  })

  test('sequential wirePod timing (printed, not asserted)', async (t) => {
    for (const [kind, dual] of [
      ['IPv4-only', false],
      ['dual-stack', true],
    ] as const) {
      const ms: number[] = []
      for (let i = 0; i < 8; i++) {
        const ns = newNs()
        const hostIfName = hostName(`s${dual ? 'd' : '4'}${i}`)
        const t0 = performance.now()
        await veth.wirePod({
          netns: ns.path,
          ifName: 'eth0',
          hostIfName,
          ipv4: v4(50 + i),
          ...(dual ? {ipv6: v6(50 + i)} : {}),
        })
        ms.push(performance.now() - t0)
        await veth.unwirePod({netns: ns.path, ifName: 'eth0', hostIfName})
      }
      t.diagnostic(`wirePod ${kind}, 8 sequential calls: ${summary(ms)}`)
    }
  })
})
