// A leaked address, end to end with the real binaries: the IPAM plugin allocates and the main plugin dies
// before writing the WorkloadEndpoint. `ipam check` must find it, `ipam gc` must repair it.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {before, describe, it} from 'node:test'
import {assertRejected, ensureBuilt, ROOT, sandbox, type Sandbox} from './helpers.ts'

const PLUGIN = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')
const NET = 'k8s-pod-network'

/** A CNI ADD by the real IPAM plugin, exactly as the main plugin would exec it; returns the address. */
function pluginAdd(sb: Sandbox, cid: string): Promise<string> {
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: NET,
    type: 'calico',
    nodename: 'node-1',
    datastore_path: sb.db,
    ipam_lock_file: path.join(sb.dir, 'ipam.lock'),
    ipam: {type: 'calico-ipam'},
  })
  const env = {
    PATH: process.env.PATH,
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: cid,
    CNI_NETNS: `/var/run/netns/${cid}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PLUGIN], {cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe']})
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (b: Buffer) => out.push(b))
    child.stderr.on('data', (b: Buffer) => err.push(b))
    child.on('error', reject)
    child.on('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8')
      if (code !== 0)
        return reject(new Error(`plugin ADD failed (${code}): ${stdout}${Buffer.concat(err).toString('utf8')}`))
      resolve((JSON.parse(stdout) as {ips: {address: string}[]}).ips[0]!.address.split('/')[0]!)
    })
    child.stdin.end(conf)
  })
}

before(() => ensureBuilt())

describe('ipam check / ipam gc: a leak left by an ADD killed before the endpoint write', () => {
  let sb: Sandbox
  let ip: string
  const handle = `${NET}.leaky`
  before(async () => {
    sb = sandbox()
    await sb.ok('pool', 'create', 'p4', '--cidr', '10.65.0.0/16')
    ip = await pluginAdd(sb, 'leaky')
  })

  it('ipam check reports the leaked address with its handle; the report is 0600 and says inUse false', async () => {
    const report = path.join(sb.dir, 'report.json')
    const before = sb.dump()
    const out = await sb.ok('ipam', 'check', '--show-problem-ips', '-o', report)
    assert.equal(sb.dump(), before, 'check is read-only')
    const lines = out.split('\n')
    assert.equal(lines[0], 'Checking IPAM for inconsistencies...')
    assert.ok(
      lines.includes(
        `  ${ip} leaked; attrs Main:${handle} Extra:ipamctl.io/netns=/var/run/netns/leaky,namespace=default,node=node-1,pod=web-0,timestamp=${lines.find((l) => l.includes('timestamp='))!.split('timestamp=')[1]}`,
      ),
      out,
    )
    assert.ok(lines.includes('Found 1 IPAM blocks.'), out)
    assert.ok(lines.includes('Found 1 IPs that are allocated in IPAM but not actually in use.'), out)
    assert.ok(lines.includes('Found 0 handles with no matching IPs (and 1 handles with matches).'), out)
    assert.ok(lines.includes('Found 0 invalid IPAMBlocks.'), out)
    assert.equal(lines.at(-2), 'Check complete; found 1 problems.')
    assert.equal(fs.statSync(report).mode & 0o777, 0o600)
    const json = JSON.parse(fs.readFileSync(report, 'utf8'))
    const [entry] = json.allocations[ip]
    assert.deepEqual(
      [entry.handle, entry.inUse, entry.pod, entry.namespace, entry.node, entry.owners],
      [handle, false, 'web-0', 'default', 'node-1', null],
    )
    assert.equal(typeof entry.sequenceNumber, 'number')
    assert.equal(json.clusterInformationRevision, '')
  })

  it('without a terminal and without --yes, ipam gc refuses (exit 2) and changes nothing', async () => {
    await assertRejected(sb, ['ipam', 'gc', '--grace', '0s'], 2, /pass --yes/)
  })

  it('from another host the leak is listed, not released: only node-1 can see that its network namespace is gone', async () => {
    const before = sb.dump()
    const out = await sb.ok('ipam', 'gc', '--node', 'elsewhere', '--grace', '0s', '--yes')
    assert.ok(out.includes(`  ${ip} (node node-1, netns /var/run/netns/leaky, handle ${handle})`), out)
    assert.match(out, /Nothing to clean up\./)
    assert.equal(sb.dump(), before)
  })

  it('--dry-run says what it would do and changes nothing; the default grace keeps a fresh leak', async () => {
    const before = sb.dump()
    const dry = await sb.ok('ipam', 'gc', '--node', 'node-1', '--grace', '0s', '--dry-run')
    assert.match(dry, new RegExp(`^Would release ${ip.replace(/\./g, '\\.')} \\(handle ${handle}, allocated `, 'm'))
    assert.match(dry, /nothing was changed/)
    const young = await sb.ok('ipam', 'gc', '--node', 'node-1', '--yes')
    assert.match(young, /Leaving 1 leaked addresses younger than 10m/)
    assert.match(young, /Nothing to clean up\./)
    assert.equal(sb.dump(), before)
  })

  it('ipam gc on node-1 (--node node-1) --grace 0s --yes releases it, and a second ipam check finds 0 problems', async () => {
    const out = await sb.ok('ipam', 'gc', '--node', 'node-1', '--grace', '0s', '--yes')
    assert.match(out, /Released 1 addresses; deleted 0 handles\./)
    const check = await sb.ok('ipam', 'check')
    assert.match(check, /Found 0 IPs that are allocated in IPAM but not actually in use\./)
    assert.match(check, /Found 0 handles with no matching IPs \(and 0 handles with matches\)\./)
    assert.ok(check.endsWith('Check complete; found 0 problems.\n'), check)
    const show = await sb.ok('ipam', 'show', '--ip', ip)
    assert.match(show, /is not assigned/)
  })
})

describe('release --from-report repairs the same leak under the datastore lock', () => {
  it('lock, check -o report, release --from-report, unlock: the leak and its handle are gone', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p4', '--cidr', '10.66.0.0/16')
    const ip = await pluginAdd(sb, 'leaky2')
    await sb.ok('datastore', 'lock')
    const report = path.join(sb.dir, 'report.json')
    assert.match(
      await sb.ok('ipam', 'check', '-o', report),
      /Found 1 IPs that are allocated in IPAM but not actually in use\./,
    )
    const out = await sb.ok('ipam', 'release', '--from-report', report, '--yes')
    assert.match(out, /Releasing 1 old IPs\.\.\./)
    assert.match(out, /Released 1 IPs successfully/)
    assert.match(await sb.ok('ipam', 'show', '--ip', ip), /is not assigned/)
    await sb.ok('datastore', 'unlock', '--yes')
    assert.match(await sb.ok('ipam', 'check'), /Check complete; found 0 problems\./)
    assert.deepEqual(sb.keys('/calico/ipam/v2/handle/'), [])
  })
})
