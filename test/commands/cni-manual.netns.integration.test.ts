// Manual pod networking end to end, in real network namespaces (root, ip(8), nsenter(1)): `cni add` with families,
// fixed addresses, MTU, a second network, delegated IPAM; netns ownership; `cni check` / `cni list --check`
// mismatches; `cni connectivity`; and 50 add/del rounds that must leave the host as it was. The "host" is a
// namespace of the test's own (test/support/host-netns.ts), so nothing here touches the machine's network.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {
  HOST_V4,
  HOST_V6,
  type HostNetns,
  makeHostNetns,
  netnsNamed,
  netnsToolsSkipReason,
} from '../support/host-netns.ts'

const skip = netnsToolsSkipReason() ?? false
const NODE = ['--node', 'n1']

interface Probe {
  from: string
  to: string
  family: number
  address: string
  ok: boolean
}

const podNs = (h: HostNetns, tag: string): string => `${h.name}-${tag}`

function addrsIn(ns: string, dev: string): string[] {
  const out = spawnSync('ip', ['-n', ns, '-j', 'addr', 'show', 'dev', dev], {encoding: 'utf8'}).stdout
  return (JSON.parse(out || '[]') as {addr_info: {local: string; prefixlen: number; scope: string}[]}[]).flatMap((l) =>
    l.addr_info.filter((a) => a.scope === 'global').map((a) => `${a.local}/${a.prefixlen}`),
  )
}

describe('manual pod networking (netns integration)', {skip}, () => {
  let h: HostNetns
  before(async () => {
    h = makeHostNetns('m')
    await h.ok('pool', 'create', 'p4', '--cidr', '10.199.0.0/24')
    await h.ok('pool', 'create', 'p6', '--cidr', 'fd00:199::/120')
    // The second network's pool: named in its netconf only (a selector no node matches keeps the default network off it).
    await h.ok('pool', 'create', 's4', '--cidr', '10.199.8.0/24', '--node-selector', '!all()')
  })
  after(() => {
    for (const ns of netnsNamed(`${h.name}-`)) spawnSync('ip', ['netns', 'del', ns])
    h.close()
  })

  test('two dual-stack pods and the host all reach each other; check and list --check say ok', async () => {
    const [a, b] = [podNs(h, 'a'), podNs(h, 'b')]
    // No family flag: both families have pools, so both pods are dual-stack.
    const outA = JSON.parse(
      await h.ok('cni', 'add', '--netns', a, '--create-netns', '--pod', 'a', ...NODE, '-o', 'json'),
    )
    await h.ok('cni', 'add', '--netns', b, '--create-netns', '--pod', 'b', ...NODE, '--mtu', '1400')
    assert.deepEqual(
      (outA.ips as {address: string}[]).map((i) => i.address.includes(':')),
      [false, true],
      'one IPv4 and one IPv6 address',
    )
    assert.equal(addrsIn(a, 'eth0').length, 2)
    const mtu = JSON.parse(spawnSync('ip', ['-n', b, '-j', 'link', 'show', 'eth0'], {encoding: 'utf8'}).stdout)[0].mtu
    assert.equal(mtu, 1400)
    const probes = JSON.parse(await h.ok('cni', 'connectivity', ...NODE, '-o', 'json')) as Probe[]
    // 3 parties, 6 ordered pairs, 2 families each.
    assert.equal(probes.length, 12)
    assert.deepEqual(
      probes.filter((p) => !p.ok),
      [],
    )
    assert.ok(probes.some((p) => p.from === 'default/a' && p.to === 'host' && p.address === HOST_V6))
    assert.ok(probes.some((p) => p.from === 'default/b' && p.to === 'host' && p.address === HOST_V4))
    const matrix = await h.ok('cni', 'connectivity', ...NODE, '--pods', 'a,b', '--no-host')
    assert.match(matrix, /^FROM \\ TO +default\/a +default\/b\n/)
    assert.equal((matrix.match(/ok v4 v6/g) ?? []).length, 2)
    assert.equal(
      await h.ok('cni', 'check', '--netns', a, '--pod', 'a', ...NODE),
      'OK: the pod network is as expected\n',
    )
    const listed = JSON.parse(await h.ok('cni', 'list', '--check', ...NODE, '-o', 'json')) as {check: {state: string}}[]
    assert.deepEqual(
      listed.map((w) => w.check.state),
      ['ok', 'ok'],
    )
    // A pod that stops answering: connectivity fails (exit 7) and names the pair.
    h.ip('link', 'set', JSON.parse(await h.ok('cni', 'list', ...NODE, '-o', 'json'))[0].interfaceName, 'down')
    const down = await h.cli('cni', 'connectivity', ...NODE, '--timeout', '300')
    assert.equal(down.status, 7, down.stderr)
    assert.match(down.stdout, /FAIL/)
    assert.match(down.stderr, /^Error: \d+ of 12 exchanges got no answer; first: /)
    for (const [ns, pod] of [
      [a, 'a'],
      [b, 'b'],
    ] as const)
      assert.match(await h.ok('cni', 'del', '--netns', ns, '--pod', pod, ...NODE), /; removed netns /)
    assert.deepEqual(netnsNamed(`${h.name}-`), [])
  })

  test('a pod with eth0 and eth1 on two networks: own addresses, host veths and records; del of each', async () => {
    const a = podNs(h, 'multi')
    const peer = podNs(h, 'peer')
    const conf = path.join(h.recordDir, '..', 'storage.conf')
    fs.writeFileSync(
      conf,
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'storage',
        type: 'ipamctl-cni',
        ipam: {type: 'ipamctl-ipam', ipv4_pools: ['s4']},
      }),
    )
    await h.ok('cni', 'add', '--netns', a, '--create-netns', '--pod', 'multi', ...NODE, '--ipv4')
    const second = JSON.parse(
      await h.ok(
        'cni',
        'add',
        '--netns',
        a,
        '--pod',
        'multi',
        ...NODE,
        '--network',
        'storage',
        '--conf',
        conf,
        '-o',
        'json',
      ),
    )
    assert.equal(second.interfaces[1].name, 'eth1', 'the first free ethN')
    assert.match(addrsIn(a, 'eth0')[0]!, /^10\.199\.0\.\d+\/32$/)
    assert.match(addrsIn(a, 'eth1')[0]!, /^10\.199\.8\.\d+\/32$/)
    const recs = JSON.parse(await h.ok('cni', 'list', ...NODE, '-o', 'json')) as {
      interfaceName: string
      network: string
    }[]
    assert.deepEqual(recs.map((r) => r.network).sort(), ['k8s-pod-network', 'storage'])
    assert.notEqual(recs[0]!.interfaceName, recs[1]!.interfaceName, 'one host veth per interface')
    // The default route stays eth0's; eth1 routes its network's block.
    const routes = spawnSync('ip', ['-n', a, 'route'], {encoding: 'utf8'}).stdout
    assert.match(routes, /^default via 169\.254\.1\.1 dev eth0/m)
    assert.match(routes, /^10\.199\.8\.\d+\/26 via 169\.254\.1\.1 dev eth1 onlink/m)
    await h.ok('cni', 'check', '--netns', a, '--pod', 'multi', ...NODE)
    await h.ok('cni', 'check', '--netns', a, '--pod', 'multi', ...NODE, '--network', 'storage', '--conf', conf)
    // Both addresses answer, from the host and from another pod.
    await h.ok('cni', 'add', '--netns', peer, '--create-netns', '--pod', 'peer', ...NODE, '--ipv4')
    const probes = JSON.parse(await h.ok('cni', 'connectivity', ...NODE, '-o', 'json')) as Probe[]
    assert.deepEqual(
      probes.filter((p) => !p.ok),
      [],
    )
    const toMulti = probes.filter((p) => p.to === 'default/multi').map((p) => `${p.from} ${p.address.slice(0, 9)}`)
    assert.deepEqual(toMulti.sort(), [
      'default/peer 10.199.0.',
      'default/peer 10.199.8.',
      'host 10.199.0.',
      'host 10.199.8.',
    ])
    // Deleting eth0 leaves eth1 and the namespace; deleting eth1 (its interface found from its record) removes both.
    assert.match(
      await h.ok('cni', 'del', '--netns', a, '--pod', 'multi', ...NODE),
      /\(eth0\); kept netns \S+: other interfaces are still in it\n$/,
    )
    assert.equal(addrsIn(a, 'eth1').length, 1)
    assert.match(
      await h.ok('cni', 'del', '--netns', a, '--pod', 'multi', ...NODE, '--network', 'storage', '--conf', conf),
      /\(eth1\); removed netns /,
    )
    await h.ok('cni', 'del', '--netns', peer, '--pod', 'peer', ...NODE)
    assert.deepEqual(netnsNamed(`${h.name}-`), [])
    assert.deepEqual(JSON.parse(await h.ok('cni', 'list', '-o', 'json')), [])
  })

  test('--ip twice gives exactly those addresses; --ifname over 15 bytes is a usage error that creates nothing', async () => {
    const ns = podNs(h, 'fixed')
    const out = JSON.parse(
      await h.ok(
        'cni',
        'add',
        '--netns',
        ns,
        '--create-netns',
        ...NODE,
        '--ip',
        '10.199.0.200',
        '--ip',
        'fd00:199::c8',
        '-o',
        'json',
      ),
    )
    assert.deepEqual(
      (out.ips as {address: string}[]).map((i) => i.address),
      ['10.199.0.200/32', 'fd00:199::c8/128'],
    )
    await h.ok('cni', 'check', '--netns', ns, ...NODE)
    await h.ok('cni', 'del', '--netns', ns, ...NODE)
    const long = podNs(h, 'long')
    const r = await h.cli('cni', 'add', '--netns', long, '--create-netns', ...NODE, '--ifname', 'a-very-long-name0')
    assert.equal(r.status, 2)
    assert.equal(r.stderr, 'Error: --ifname: interface name "a-very-long-name0" is longer than 15 characters\n')
    assert.deepEqual(netnsNamed(long), [])
    const twoV4 = await h.cli('cni', 'add', '--netns', long, ...NODE, '--ip', '10.199.0.5', '--ip', '10.199.0.6')
    assert.equal(twoV4.status, 2)
    assert.equal(twoV4.stderr, 'Error: --ip: give at most one address per family\n')
  })

  test('cni check says which side is wrong (exit 7); list --check shows it', async () => {
    const ns = podNs(h, 'chk')
    await h.ok('cni', 'add', '--netns', ns, '--create-netns', '--pod', 'chk', ...NODE)
    const pod = ['--netns', ns, '--pod', 'chk', ...NODE]
    const v4 = addrsIn(ns, 'eth0').find((a) => !a.includes(':'))!
    const hostIf = JSON.parse(await h.ok('cni', 'list', '-o', 'json'))[0].interfaceName
    h.ip('route', 'del', v4, 'dev', hostIf)
    const host = await h.cli('cni', 'check', ...pod)
    assert.equal(host.status, 7)
    assert.equal(host.stderr, `Error: CHECK failed: the host side is wrong: host route ${v4} dev ${hostIf} missing\n`)
    h.ip('route', 'add', v4, 'dev', hostIf, 'scope', 'link')
    await h.ok('cni', 'check', ...pod)
    spawnSync('ip', ['-n', ns, 'addr', 'del', v4, 'dev', 'eth0'])
    const bad = await h.cli('cni', 'check', ...pod)
    assert.equal(bad.status, 7)
    assert.equal(bad.stderr, `Error: CHECK failed: the pod side is wrong: address ${v4} missing on eth0 in the pod\n`)
    const listed = await h.cli('cni', 'list', '--check', ...NODE)
    assert.equal(listed.status, 7)
    assert.match(listed.stdout, /STATE\n.* pod side: address \S+ missing on eth0 in the pod\n$/)
    assert.match(listed.stderr, /^Error: CHECK failed: the pod side is wrong: 1 of 1 endpoints differ; first: /)
    await h.ok('cni', 'del', ...pod)
    const gone = await h.cli('cni', 'check', ...pod)
    assert.equal(gone.status, 3)
  })

  test('a namespace ipamctl did not create is never removed; --keep-netns keeps its own', async () => {
    const theirs = podNs(h, 'theirs')
    spawnSync('ip', ['netns', 'add', theirs])
    await h.ok('cni', 'add', '--netns', theirs, '--create-netns', ...NODE)
    assert.doesNotMatch(await h.ok('cni', 'del', '--netns', theirs, ...NODE), /removed netns/)
    assert.deepEqual(netnsNamed(theirs), [theirs])
    spawnSync('ip', ['netns', 'del', theirs])
    const mine = podNs(h, 'mine')
    await h.ok('cni', 'add', '--netns', mine, '--create-netns', ...NODE)
    await h.ok('cni', 'del', '--netns', mine, ...NODE, '--keep-netns')
    assert.deepEqual(netnsNamed(mine), [mine])
    // Recreated by someone else under the same name: the record no longer names it, so it stays.
    spawnSync('ip', ['netns', 'del', mine])
    spawnSync('ip', ['netns', 'add', mine])
    await h.ok('cni', 'del', '--netns', mine, ...NODE)
    assert.deepEqual(netnsNamed(mine), [mine])
    spawnSync('ip', ['netns', 'del', mine])
  })

  test('--conf with a delegated host-local IPAM: the delegate gets CNI_*, del releases its address', async () => {
    const plugins = ['/opt/cni/bin/host-local', '/usr/lib/cni/host-local']
    if (!plugins.some((p) => fs.existsSync(p))) return void test.skip?.('host-local is not installed')
    const ns = podNs(h, 'hl')
    const dataDir = path.join(h.recordDir, '..', 'host-local')
    const conf = path.join(h.recordDir, '..', 'hl.conf')
    fs.writeFileSync(
      conf,
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'hl',
        type: 'ipamctl-cni',
        ipam: {type: 'host-local', subnet: '10.199.16.0/24', dataDir},
      }),
    )
    const out = JSON.parse(
      await h.ok('cni', 'add', '--netns', ns, '--create-netns', '--pod', 'hl', ...NODE, '--conf', conf, '-o', 'json'),
    )
    assert.match(out.ips[0].address, /^10\.199\.16\.\d+\/32$/)
    assert.ok(fs.existsSync(path.join(dataDir, 'hl', out.ips[0].address.split('/')[0])))
    await h.ok('cni', 'check', '--netns', ns, '--pod', 'hl', ...NODE, '--conf', conf)
    await h.ok('cni', 'del', '--netns', ns, '--pod', 'hl', ...NODE, '--conf', conf)
    assert.ok(!fs.existsSync(path.join(dataDir, 'hl', out.ips[0].address.split('/')[0])))
    assert.deepEqual(netnsNamed(ns), [])
  })

  test('50 add/del rounds, failing ones included, leave the host as it was', async () => {
    const before = h.snapshot()
    const records = () => (fs.existsSync(h.recordDir) ? fs.readdirSync(h.recordDir) : [])
    let failed = 0
    for (let i = 0; i < 50; i++) {
      const ns = podNs(h, `r${i}`)
      const pod = ['--netns', ns, '--pod', `r${i}`, ...NODE]
      if (i % 10 === 3) {
        // Fails in IPAM, after the namespace was made: it must go again.
        const r = await h.cli('cni', 'add', ...pod, '--create-netns', '--ip', '10.250.0.1')
        assert.notEqual(r.status, 0)
        failed++
      } else if (i % 10 === 7) {
        // Fails in the dataplane (the interface name is taken in the pod), after IPAM: everything is undone.
        spawnSync('ip', ['netns', 'add', ns])
        spawnSync('ip', ['-n', ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'p0'])
        const r = await h.cli('cni', 'add', ...pod, '--create-netns')
        assert.equal(r.status, 4, r.stderr)
        spawnSync('ip', ['netns', 'del', ns])
        failed++
      } else {
        await h.ok('cni', 'add', ...pod, '--create-netns')
        await h.ok('cni', 'del', ...pod)
        if (i % 10 === 5) await h.ok('cni', 'del', ...pod) // idempotent
      }
      assert.deepEqual(netnsNamed(ns), [], `round ${i} left its netns`)
    }
    assert.equal(failed, 10)
    assert.equal(h.snapshot(), before)
    assert.deepEqual(netnsNamed(`${h.name}-r`), [])
    assert.deepEqual(records(), [])
    assert.deepEqual(JSON.parse(await h.ok('cni', 'list', '-o', 'json')), [])
    assert.match(await h.ok('ipam', 'show'), /\| IP Pool {2}\| 10\.199\.0\.0\/24 +\| +256 \| +0 \(0%\)/)
  })
})
