// `ipamctl cni add|check|list|del|install` against real network namespaces (root).
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {describe, test} from 'node:test'
import {sandbox} from './helpers.ts'

const canNetns = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0
const skip = canNetns ? false : 'needs root and ip netns'

function cleanup(ns: string): void {
  spawnSync('ip', ['netns', 'del', ns])
}

describe('cni commands (netns integration)', {skip}, () => {
  test('add --create-netns wires the pod; check, list and del mirror it; del is idempotent', async () => {
    const sb = sandbox()
    const ns = `ipamctl-cmd-${process.pid}`
    try {
      await sb.ok('pool', 'create', 'p', '--cidr', '10.195.0.0/24')
      const pod = ['--netns', ns, '--pod', 'web-0', '--namespace', 'demo', '--node', 'n1']
      const out = JSON.parse(await sb.ok('cni', 'add', ...pod, '--create-netns', '-o', 'json'))
      assert.equal(out.cniVersion, '1.0.0')
      assert.equal(out.interfaces[0].mac, 'ee:ee:ee:ee:ee:ee')
      assert.equal(out.interfaces[1].sandbox, `/var/run/netns/${ns}`)
      const ip = out.ips[0].address as string
      assert.match(ip, /^10\.195\.0\.\d+\/32$/)
      const addrs = JSON.parse(execFileSync('ip', ['-n', ns, '-j', 'addr', 'show', 'eth0'], {encoding: 'utf8'}))
      assert.ok(addrs[0].addr_info.some((a: {local: string; prefixlen: number}) => `${a.local}/${a.prefixlen}` === ip))
      assert.equal(await sb.ok('cni', 'check', ...pod), 'OK: the pod network is as expected\n')
      const list = JSON.parse(await sb.ok('cni', 'list', '--node', 'n1', '-o', 'json'))
      assert.deepEqual(
        list.map((w: {pod: string; ipNetworks: string[]}) => [w.pod, w.ipNetworks]),
        [['web-0', [ip]]],
      )
      // Break the pod: check must notice.
      execFileSync('ip', ['-n', ns, 'addr', 'del', ip, 'dev', 'eth0'])
      const bad = await sb.run('cni', 'check', ...pod)
      assert.notEqual(bad.status, 0)
      assert.match(bad.stderr, /^Error: /)
      assert.match(
        await sb.ok('cni', 'del', ...pod),
        /^Deleted pod network of container ipamctl-ipamctl-cmd-\S+ \(eth0\); removed netns ipamctl-cmd-/,
      )
      assert.match(await sb.ok('cni', 'del', ...pod), /^Deleted/)
      assert.deepEqual(JSON.parse(await sb.ok('cni', 'list', '-o', 'json')), [])
      // The namespace was made by --create-netns, so del removed it along with the pod's eth0.
      assert.notEqual(spawnSync('ip', ['-n', ns, 'link']).status, 0)
      assert.match(await sb.ok('ipam', 'show', '--ip', ip.split('/')[0]!), /is not assigned/)
    } finally {
      cleanup(ns)
    }
  })

  test('add into a namespace that does not exist fails cleanly and allocates nothing', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.195.1.0/24')
    const r = await sb.run('cni', 'add', '--netns', `ipamctl-missing-${process.pid}`, '--node', 'n1')
    assert.equal(r.status, 3, r.stderr)
    assert.match(r.stderr, /^Error: .*ipamctl-missing/)
    assert.equal(r.stderr.split('\n').filter(Boolean).length, 1)
    // Allocation happened first and was rolled back: no address, no handle, no endpoint remain.
    assert.deepEqual(sb.keys('/calico/ipam/v2/handle/'), [])
    assert.deepEqual(sb.keys('/calico/resources/v3/projectcalico.org/workloadendpoints/'), [])
    assert.match(await sb.ok('ipam', 'show'), /\| IP Pool {2}\| 10\.195\.1\.0\/24 \|\s+256 \|\s+0 \(0%\)/)
  })

  test('install links the plugins into a CNI bin directory, under calico names with --as-calico', async () => {
    const sb = sandbox()
    const dir = path.join(sb.dir, 'cni-bin')
    const prefix = path.join(sb.dir, 'opt-ipamctl')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'calico-ipam'), "the operator's calico-ipam")
    await sb.ok('cni', 'install', '--dir', dir, '--prefix', prefix)
    assert.equal(fs.readlinkSync(path.join(dir, 'ipamctl-cni')), path.join(prefix, 'current/bin/ipamctl-cni'))
    assert.equal(fs.readlinkSync(path.join(dir, 'ipamctl-ipam')), path.join(prefix, 'current/bin/ipamctl-ipam'))
    const again = await sb.run('cni', 'install', '--dir', dir, '--prefix', prefix, '--as-calico')
    assert.equal(again.status, 4)
    assert.match(again.stderr, /calico-ipam already exists and is not ipamctl's; pass --force to replace it\n$/)
    await sb.ok('cni', 'install', '--dir', dir, '--prefix', prefix, '--as-calico', '--force')
    const version = execFileSync(path.join(dir, 'calico-ipam'), {
      env: {...process.env, CNI_COMMAND: 'VERSION'},
      input: '',
      encoding: 'utf8',
    })
    assert.match(version, /"supportedVersions"/)
    await sb.ok('cni', 'uninstall', '--prefix', prefix)
    assert.deepEqual(fs.readdirSync(dir), [])
    assert.equal(fs.existsSync(prefix), false)
  })
})
