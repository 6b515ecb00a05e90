// `ipamctl cni add` / `cni del` by hand log like the plugin (root, real network namespace): without --conf into
// the default log file (here the sandbox's, through IPAMCTL_CNI_LOG_FILE), and `cni logs --pod` tells the story.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {test} from 'node:test'
import {sandbox} from './helpers.ts'

const canNetns = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0

test('cni add and del log block, addresses, interface and routes, record; cni logs shows them in order', {
  skip: canNetns ? false : 'needs root and ip netns',
}, async () => {
  const sb = sandbox()
  const ns = `ipamctl-log-${process.pid}`
  const file = path.join(sb.dir, 'cni', 'cni.log')
  try {
    await sb.ok('pool', 'create', 'p', '--cidr', '10.196.0.0/24')
    const pod = ['--netns', ns, '--pod', 'web-0', '--namespace', 'demo', '--node', 'n1']
    const out = JSON.parse(await sb.ok('cni', 'add', ...pod, '--create-netns', '-o', 'json'))
    const ip = (out.ips[0].address as string).split('/')[0]!
    await sb.ok('cni', 'del', ...pod)
    assert.equal(fs.statSync(file).mode & 0o777, 0o600)
    const r = await sb.run('cni', 'logs', '--pod', 'demo/web-0', '--log-file', file)
    assert.equal(r.status, 0, r.stderr)
    const msgs = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(l.indexOf(': ') + 2))
    const order = [
      /^claimed block 10\.196\.0\.\d+\/26 for node n1$/,
      new RegExp(`^assigned addresses ips=${ip.replace(/\./g, '\\.')}/26 handle=k8s-pod-network\\.\\S+ via=datastore$`),
      new RegExp(
        `^created interface and routes host_if=cali\\w+ pod_if=eth0 .*routes="${ip.replace(/\./g, '\\.')} dev cali\\w+"$`,
      ),
      /^wrote WorkloadEndpoint endpoint=demo\/\S+$/,
      /^removed interface host_if=cali\w+ outcome=\S+$/,
      new RegExp(`^released addresses ips=${ip.replace(/\./g, '\\.')} `),
    ]
    let at = 0
    for (const re of order) {
      const i = msgs.findIndex((m, j) => j >= at && re.test(m))
      assert.ok(i >= 0, `${re} after line ${at} in:\n${msgs.join('\n')}`)
      at = i + 1
    }
    assert.match(r.stdout, /ipamctl ADD container=\S+ netns=\/var\/run\/netns\/ipamctl-log-\d+ pod=demo\/web-0: /)
  } finally {
    spawnSync('ip', ['netns', 'del', ns])
  }
})

test('a failed ADD after IPAM logs the rollback and why, and the release of its addresses', {
  skip: canNetns ? false : 'needs root and ip netns',
}, async () => {
  const sb = sandbox()
  const ns = `ipamctl-logrb-${process.pid}`
  const file = path.join(sb.dir, 'rb', 'cni.log')
  try {
    await sb.ok('pool', 'create', 'p', '--cidr', '10.196.1.0/24')
    // The MTU is checked by the wiring, after IPAM has assigned the address: the ADD is rolled back.
    const conf = sb.file(
      'bad-mtu.conf',
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'ipamctl-cni',
        mtu: 70000,
        log_file_path: file,
        ipam: {type: 'ipamctl-ipam'},
      }),
    )
    const r = await sb.run(
      'cni',
      'add',
      '--netns',
      ns,
      '--create-netns',
      '--pod',
      'web-1',
      '--namespace',
      'demo',
      '--node',
      'n1',
      '--conf',
      conf,
    )
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /warning: ADD failed after IPAM, rolling back: invalid MTU 70000/)
    const story = await sb.run('cni', 'logs', '--pod', 'demo/web-1', '--log-file', file)
    const lines = story.stdout.split('\n').filter(Boolean)
    const i = lines.findIndex((l) =>
      /\[WARNING\].*: ADD failed after IPAM, rolling back: invalid MTU 70000 endpoint_written=false interface_created=false ips=10\.196\.1\.\d+\/26$/.test(
        l,
      ),
    )
    assert.ok(i > 0, story.stdout)
    assert.match(lines[i + 1]!, /\[INFO\].*: released addresses ips=10\.196\.1\.\d+ /)
    assert.match(lines[i + 2]!, /\[INFO\].*: rolled back the failed ADD$/)
    assert.match(lines[i + 3]!, /\[ERROR\].*: invalid MTU 70000 code=\d+$/, 'the error the command failed with')
    assert.deepEqual(
      sb.keys().filter((k) => k.includes('/handle/')),
      [],
      'the address was released',
    )
  } finally {
    spawnSync('ip', ['netns', 'del', ns])
  }
})
