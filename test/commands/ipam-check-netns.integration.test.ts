// A pod whose network namespace vanished without a CNI DEL (a runtime crash): `ipam check` on its node counts
// its address as leaked, `ipam gc` releases it and drops the endpoint record; other nodes' endpoints are trusted.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {describe, test} from 'node:test'
import {sandbox} from './helpers.ts'

const canNetns = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0

describe('ipam check / gc with vanished pods (netns integration)', {
  skip: canNetns ? false : 'needs root and ip netns',
}, () => {
  test('an endpoint whose netns is gone is a leak on its node only; gc repairs it', async () => {
    const sb = sandbox()
    const ns = `ipamctl-gone-${process.pid}`
    try {
      await sb.ok('pool', 'create', 'p', '--cidr', '10.193.0.0/24')
      const added = JSON.parse(
        await sb.ok(
          'cni',
          'add',
          '--netns',
          ns,
          '--create-netns',
          '--pod',
          'web-0',
          '--namespace',
          'demo',
          '--node',
          'n1',
          '-o',
          'json',
        ),
      )
      const ip = (added.ips[0].address as string).split('/')[0]!
      assert.match(
        await sb.ok('ipam', 'check', '--node', 'n1'),
        /Found 0 IPs that are allocated in IPAM but not actually in use\./,
      )
      spawnSync('ip', ['netns', 'del', ns]) // the pod dies; nobody sends DEL
      // Seen from another node the record is trusted; from n1 the address is leaked.
      assert.match(
        await sb.ok('ipam', 'check', '--node', 'n2'),
        /Found 0 IPs that are allocated in IPAM but not actually in use\./,
      )
      const check = await sb.ok('ipam', 'check', '--node', 'n1', '--show-problem-ips')
      assert.match(check, /Found 1 IPs that are allocated in IPAM but not actually in use\./)
      assert.ok(check.includes(`${ip} leaked`), check)
      const gc = await sb.ok('ipam', 'gc', '--node', 'n1', '--grace', '0s', '--yes')
      assert.match(gc, /Released 1 addresses/)
      assert.match(gc, /Deleted 1 endpoint records of pods whose network namespace is gone: demo\/n1-k8s-web--0-eth0/)
      assert.match(await sb.ok('ipam', 'show', '--ip', ip), /is not assigned/)
      assert.match(await sb.ok('ipam', 'check', '--node', 'n1'), /Check complete; found 0 problems\./)
      // The host veth went with the namespace; a DEL arriving late still succeeds.
      await sb.ok('cni', 'del', '--netns', ns, '--pod', 'web-0', '--namespace', 'demo', '--node', 'n1')
    } finally {
      spawnSync('ip', ['netns', 'del', ns])
    }
  })
})
