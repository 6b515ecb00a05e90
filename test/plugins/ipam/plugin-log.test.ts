// The REAL ipamctl-ipam executable's log (docs/logging.md): started as a runtime starts it, with the netconf's
// log_* keys, against a temp embedded datastore. Concurrent processes append whole lines to one file; an
// unwritable path never fails a pod; log_level filters; no secret reaches any line.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, test} from 'node:test'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import {type ProcResult, runProcess} from '../../support/process.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'

const BIN = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-plugin-log-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
before(() => ensureBuilt())

let boxes = 0
async function box(): Promise<{dir: string; db: string}> {
  const dir = path.join(tmp, `box${++boxes}`)
  fs.mkdirSync(dir)
  const db = path.join(dir, 'ipam.db')
  const store = SqliteStore.open(db)
  await createPools(makeCtx(store), [{name: 'default-ipv4-ippool', cidr: '10.65.0.0/16'}])
  await store.close()
  return {dir, db}
}

function conf(
  b: {dir: string; db: string},
  extra: Record<string, unknown>,
  ipam: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'calico',
    nodename: 'node-1',
    datastore_path: b.db,
    ipam_lock_file: path.join(b.dir, 'ipam.lock'),
    ipamctl_agent_socket: '',
    ...extra,
    ipam: {type: 'calico-ipam', ...ipam},
  })
}

function plugin(
  command: 'ADD' | 'DEL',
  cid: string,
  stdin: string,
  env: Record<string, string> = {},
): Promise<ProcResult> {
  return runProcess(process.execPath, [BIN], {
    cwd: ROOT,
    stdin,
    env: {
      PATH: process.env.PATH,
      CNI_COMMAND: command,
      CNI_CONTAINERID: cid,
      CNI_NETNS: `/var/run/netns/${cid}`,
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/opt/cni/bin',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-${cid}`,
      ...env,
    },
  })
}

const LINE =
  /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(ERROR|WARNING|INFO|DEBUG)\]\[\d+\] ipamctl-ipam (ADD|DEL) container=(\S+) (netns=\S+ )?pod=default\/pod-\3: .+$/

test('20 parallel ADDs (real processes) append whole lines to one log file, each ADD its own story', async () => {
  const b = await box()
  const file = path.join(b.dir, 'log', 'cni.log')
  const text = conf(b, {log_file_path: file})
  const ids = Array.from({length: 20}, (_, i) => `c${String(i).padStart(2, '0')}`)
  const runs = await Promise.all(ids.map((id) => plugin('ADD', id, text)))
  for (const r of runs) assert.equal(r.code, 0, `${r.stdout}${r.stderr}`)
  const lines = fs.readFileSync(file, 'utf8').split('\n')
  assert.equal(lines.pop(), '', 'the file ends with a whole line')
  for (const l of lines) assert.match(l, LINE)
  for (const [i, id] of ids.entries()) {
    const mine = lines.filter((l) => l.includes(` container=${id} `))
    const ip = (JSON.parse(runs[i]!.stdout) as {ips: {address: string}[]}).ips[0]!.address
    assert.ok(
      mine.some((l) => l.includes(`: assigned addresses ips=${ip} handle=k8s-pod-network.${id} via=datastore`)),
      `${id}: ${mine.join('\n')}`,
    )
  }
  assert.equal(fs.statSync(file).mode & 0o777, 0o600)
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700)
  // stderr always gets the same lines.
  assert.ok(runs[0]!.stderr.split('\n').some((l) => l.includes(': assigned addresses ')))
})

test('an unwritable log path falls back to stderr with one warning; the ADD succeeds', async () => {
  const b = await box()
  const notADir = path.join(b.dir, 'plain-file')
  fs.writeFileSync(notADir, '')
  const r = await plugin('ADD', 'u1', conf(b, {log_file_path: path.join(notADir, 'cni.log')}))
  assert.equal(r.code, 0, r.stdout + r.stderr)
  assert.ok(JSON.parse(r.stdout).ips.length === 1)
  const warnings = r.stderr.split('\n').filter((l) => l.includes('[WARNING]'))
  assert.equal(warnings.length, 1, r.stderr)
  assert.match(warnings[0]!, /cannot open the log file .*plain-file\/cni\.log: ENOTDIR; logging to stderr only/)
  assert.match(r.stderr, /: assigned addresses /)
})

test('log_level filters both sinks: warning hides info, debug adds the netconf (from the ipam section too)', async () => {
  const b = await box()
  const file = path.join(b.dir, 'cni.log')
  const quiet = await plugin('ADD', 'q1', conf(b, {log_file_path: file, log_level: 'warning'}))
  assert.equal(quiet.code, 0, quiet.stderr)
  assert.equal(quiet.stderr, '')
  assert.ok(!fs.existsSync(file) || fs.readFileSync(file, 'utf8') === '')
  const loud = await plugin('ADD', 'q2', conf(b, {}, {log_file_path: file, log_level: 'Debug'}))
  assert.equal(loud.code, 0, loud.stderr)
  const lines = fs.readFileSync(file, 'utf8')
  assert.match(lines, /\[DEBUG\].* container=q2 .*: network configuration config=/)
  assert.match(lines, /\[INFO\].* container=q2 .*: assigned addresses /)
})

test('an error is logged, at error level, with the message the error JSON carries', async () => {
  const b = await box()
  const file = path.join(b.dir, 'cni.log')
  const r = await plugin('ADD', 'e1', conf(b, {log_file_path: file}, {ipv4_pools: ['192.168.99.0/24']}))
  assert.equal(r.code, 1)
  const err = JSON.parse(r.stdout) as {code: number; msg: string}
  const line = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.includes('[ERROR]'))
  assert.ok(line, 'an ERROR line')
  assert.ok(line.includes(`: ${err.msg}`) && line.endsWith(` code=${err.code}`), line)
})

test('no secret reaches a log line at any level (debug, netconf and environment secrets, failing and passing verbs)', async () => {
  const b = await box()
  const file = path.join(b.dir, 'cni.log')
  const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----'
  const secrets = [
    'netconf-pw-1f9a',
    'ipam-pw-77c2',
    'k8s-token-5e1d',
    'env-pw-90ab',
    'env-key-cc31',
    'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
  ]
  const text = (ipam: Record<string, unknown> = {}) =>
    conf(
      b,
      {
        log_file_path: file,
        log_level: 'debug',
        etcd_password: secrets[0],
        etcd_key: pem,
        policy: {type: 'k8s', k8s_auth_token: secrets[2]},
      },
      {etcd_password: secrets[1], ...ipam},
    )
  const env = {ETCD_PASSWORD: secrets[3]!, ETCD_KEY: secrets[4]!}
  const runs = [
    await plugin('ADD', 's1', text(), env),
    await plugin('ADD', 's2', text({ipv4_pools: [`bad-${secrets[0]}`]}), env),
    await plugin('DEL', 's1', text(), env),
  ]
  assert.deepEqual(
    runs.map((r) => r.code),
    [0, 1, 0],
    runs.map((r) => r.stdout).join('\n'),
  )
  const all = [fs.readFileSync(file, 'utf8'), ...runs.map((r) => r.stderr)].join('\n')
  assert.match(all, /\[DEBUG\]/)
  assert.match(all, /etcd_password\\":\\"\[REDACTED\]/)
  for (const s of secrets) assert.ok(!all.includes(s), `secret ${s} in the log:\n${all}`)
  assert.ok(!all.includes('BEGIN PRIVATE KEY') || !all.includes('MIIE'))
})

test('log_file_max_size and log_file_max_count from the netconf rotate the file: <file>.1 … .N, never more', async () => {
  const b = await box()
  const file = path.join(b.dir, 'cni.log')
  // 0.001 MB ≈ 1 KB: an ADD writes about 200 bytes, so 30 ADDs rotate about six times.
  const text = conf(b, {log_file_path: file, log_file_max_size: 0.001, log_file_max_count: 2})
  for (let i = 0; i < 30; i++) {
    const r = await plugin('ADD', `r${String(i).padStart(2, '0')}`, text)
    assert.equal(r.code, 0, r.stdout + r.stderr)
  }
  const names = fs.readdirSync(b.dir).filter((n) => n.startsWith('cni.log'))
  assert.deepEqual(names.sort(), ['cni.log', 'cni.log.1', 'cni.log.2'])
  for (const n of names) {
    const lines = fs.readFileSync(path.join(b.dir, n), 'utf8').split('\n').filter(Boolean)
    assert.ok(lines.length > 0, n)
    for (const l of lines) assert.match(l, LINE)
  }
  // The newest ADD's story is in the live file; the oldest ones were rotated away past max count.
  const live = fs.readFileSync(file, 'utf8')
  assert.match(live, /container=r29 /)
  const kept = names.map((n) => fs.readFileSync(path.join(b.dir, n), 'utf8')).join('')
  assert.ok(!kept.includes('container=r00 '), 'the oldest rotation beyond max count is gone')
})
