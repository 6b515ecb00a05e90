// `ipamctl cni logs`: one pod's story from the plugin log file and its rotations, in time order, read-only.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {before, test} from 'node:test'
import {createLogger} from '../../src/lib/log/logger.ts'
import {addEnv, ipamPluginProc} from '../support/agent.ts'
import {ensureBuilt, sandbox} from './helpers.ts'

before(() => ensureBuilt())

/** A line as the plugins write it, at a given time. */
function line(time: string, cmd: string, container: string, pod: string | undefined, msg: string): string {
  let out = ''
  createLogger({
    level: 'debug',
    component: `ipamctl-cni ${cmd}`,
    context: {container, netns: cmd === 'DEL' ? undefined : `/var/run/netns/${container}`, pod},
    sinks: [{write: (l) => (out = l)}],
    now: () => new Date(time),
  }).info(msg)
  return out
}

test("cni logs: one pod's story across rotated files, in time order; --container, --since; reads only", async () => {
  const sb = sandbox()
  const dir = path.join(sb.dir, 'log')
  fs.mkdirSync(dir)
  const file = path.join(dir, 'cni.log')
  const now = Date.now()
  const at = (minAgo: number, ms = 0) => new Date(now - minAgo * 60_000 + ms).toISOString()
  // Oldest in cni.log.2, then .1, then the file; one late line of the previous file landed in .1 (a writer that
  // still held the old descriptor) after lines of the new one.
  fs.writeFileSync(`${file}.2`, line(at(30), 'ADD', 'c1', 'default/web-0', 'assigned addresses'))
  fs.writeFileSync(
    `${file}.1`,
    line(at(20), 'ADD', 'c2', 'default/other', 'assigned addresses') +
      line(at(20, 2), 'ADD', 'c1', 'default/web-0', 'rolled back the failed ADD') +
      'a line some other tool wrote\n',
  )
  fs.writeFileSync(
    file,
    line(at(20, 1), 'ADD', 'c1', 'default/web-0', 'ADD failed after IPAM, rolling back: boom') +
      line(at(5), 'DEL', 'c1', undefined, 'released addresses') +
      line(at(1), 'ADD', 'c3', 'default/web-0', 'assigned addresses'),
  )
  fs.writeFileSync(path.join(dir, 'cni.log.bak'), line(at(1), 'ADD', 'c1', 'default/web-0', 'not a rotation'))
  const before = fs.readdirSync(dir).map((f) => [f, fs.statSync(path.join(dir, f)).mtimeMs])

  const msgs = (stdout: string) =>
    stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(l.indexOf(': ') + 2))
  const pod = await sb.run('cni', 'logs', '--pod', 'default/web-0', '--log-file', file)
  assert.equal(pod.status, 0, pod.stderr)
  assert.deepEqual(msgs(pod.stdout), [
    'assigned addresses',
    'ADD failed after IPAM, rolling back: boom',
    'rolled back the failed ADD',
    'released addresses', // the DEL names no pod: it is c1's, a container of the pod
    'assigned addresses',
  ])
  assert.ok(pod.stdout.split('\n')[3]!.includes('ipamctl-cni DEL container=c1:'))

  const c1 = await sb.run('cni', 'logs', '--container', 'c1', '--since', '10m', '--log-file', file)
  assert.deepEqual(msgs(c1.stdout), ['released addresses'])
  const all = await sb.run('cni', 'logs', '--log-file', file)
  assert.equal(all.stdout.split('\n').filter(Boolean).length, 7, 'every line, the other tool’s included')
  assert.ok(!all.stdout.includes('not a rotation'), 'cni.log.bak is not a rotation')

  assert.deepEqual(
    fs.readdirSync(dir).map((f) => [f, fs.statSync(path.join(dir, f)).mtimeMs]),
    before,
    'nothing written',
  )
  const missing = await sb.run('cni', 'logs', '--log-file', path.join(sb.dir, 'nope', 'cni.log'))
  assert.equal(missing.status, 3)
  assert.match(missing.stderr, /cannot read the log directory .*nope: ENOENT/)
  const badPod = await sb.run('cni', 'logs', '--pod', 'web-0', '--log-file', file)
  assert.equal(badPod.status, 2)
  assert.match(badPod.stderr, /--pod web-0: use NAMESPACE\/NAME/)
})

test('cni logs reads what the real plugin wrote: ADD then DEL of one pod', async () => {
  const sb = sandbox()
  await sb.ok('pool', 'create', 'p4', '--cidr', '10.72.0.0/16')
  const file = path.join(sb.dir, 'cni', 'cni.log')
  const conf = {
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'ipamctl-ipam',
    nodename: 'node-1',
    datastore_path: sb.db,
    ipam_lock_file: path.join(sb.dir, 'ipam.lock'),
    ipamctl_agent_socket: '',
    log_file_path: file,
    ipam: {type: 'ipamctl-ipam'},
  }
  const args = 'K8S_POD_NAMESPACE=prod;K8S_POD_NAME=api-1'
  for (const [cid, cmd] of [
    ['x1', 'ADD'],
    ['y9', 'ADD'],
    ['x1', 'DEL'],
  ] as const) {
    const r = await ipamPluginProc({...addEnv(cid, cmd), CNI_ARGS: cid === 'x1' ? args : undefined}, conf)
    assert.equal(r.code, 0, r.stdout + r.stderr)
  }
  const r = await sb.run('cni', 'logs', '--pod', 'prod/api-1', '--log-file', file)
  assert.equal(r.status, 0, r.stderr)
  const lines = r.stdout.split('\n').filter(Boolean)
  assert.ok(lines.length >= 3, r.stdout)
  assert.ok(lines.every((l) => l.includes('container=x1 ')))
  assert.match(lines[0]!, /ipamctl-ipam ADD .*: claimed block 10\.72\./)
  assert.match(lines.at(-1)!, /ipamctl-ipam DEL .*: released addresses ips=10\.72\./)
})
