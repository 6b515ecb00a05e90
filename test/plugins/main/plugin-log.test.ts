// ipamctl-cni's log, as test/plugins/ipam/plugin-log.test.ts proves for ipamctl-ipam: at debug the netconf is
// logged, and no secret of the netconf or the environment reaches any line of the file or of stderr, on a verb
// that fails (a network namespace that does not exist: nothing is wired, so no root or netns is needed) and on
// one that succeeds (DEL of a container never added).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, test} from 'node:test'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'
import {runProcess} from '../../support/process.ts'

const BIN = path.join(ROOT, 'bin', 'ipamctl-cni.cjs')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cni-log-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
before(() => ensureBuilt())

test('ipamctl-cni: no secret reaches a log line at debug (netconf and environment secrets, failing and passing verbs)', async () => {
  const db = path.join(tmp, 'ipam.db')
  const store = SqliteStore.open(db)
  await createPools(makeCtx(store), [{name: 'default-ipv4-ippool', cidr: '10.66.0.0/16'}])
  await store.close()
  const file = path.join(tmp, 'log', 'cni.log')
  const secrets = [
    'netconf-pw-3e1a',
    'ipam-pw-51d0',
    'k8s-token-a9f2',
    'env-pw-7b7b',
    'env-key-0c4d',
    'MIIEpAIBAAKCAQEA',
  ]
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'ipamctl-cni',
    nodename: 'node-1',
    datastore_path: db,
    ipam_lock_file: path.join(tmp, 'ipam.lock'),
    ipamctl_agent_socket: '',
    log_file_path: file,
    log_level: 'debug',
    etcd_password: secrets[0],
    etcd_key: `-----BEGIN RSA PRIVATE KEY-----\n${secrets[5]}\n-----END RSA PRIVATE KEY-----`,
    policy: {type: 'k8s', k8s_auth_token: secrets[2]},
    // ipamctl-ipam is served in process (no exec on CNI_PATH).
    ipam: {type: 'ipamctl-ipam', etcd_password: secrets[1]},
  })
  const run = (command: string) =>
    runProcess(process.execPath, [BIN], {
      cwd: ROOT,
      stdin: conf,
      env: {
        PATH: process.env.PATH,
        CNI_COMMAND: command,
        CNI_CONTAINERID: 'secret-test',
        CNI_NETNS: path.join(tmp, 'no-such-netns'),
        CNI_IFNAME: 'eth0',
        CNI_PATH: path.join(ROOT, 'bin'),
        CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
        ETCD_PASSWORD: secrets[3]!,
        ETCD_KEY: secrets[4]!,
      },
    })
  const add = await run('ADD')
  const del = await run('DEL')
  assert.notEqual(add.code, 0, 'ADD into a missing netns fails')
  assert.equal(del.code, 0, del.stdout + del.stderr)
  const all = [fs.readFileSync(file, 'utf8'), add.stderr, del.stderr].join('\n')
  assert.match(all, /\[DEBUG\]\[\d+\] ipamctl-cni ADD container=secret-test/)
  assert.match(all, /\[ERROR\]\[\d+\] ipamctl-cni ADD container=secret-test/)
  assert.match(all, /REDACTED/)
  for (const s of secrets) assert.ok(!all.includes(s), `secret ${s} in the log:\n${all}`)
})
