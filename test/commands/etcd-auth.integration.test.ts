// Username/password authentication (ETCD_USERNAME / ETCD_PASSWORD, or the config file) against an etcd
// with auth enabled.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {Cli, configText, etcdDump} from './etcd-cli.ts'
import {assertCleanError, lines} from './helpers.ts'

let server: EtcdServer
let ep: string
const cli = new Cli()
const ROOT_USER = ['--user', 'root:rootpw']
const value = (key: string) => etcdDump(server, key, ...ROOT_USER).kvs.get(key)

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  ep = server.endpoint
  server.ctl('user', 'add', 'root:rootpw', '--interactive=false')
  server.ctl('auth', 'enable')
  // Auth is really on: anonymous reads are refused.
  assert.throws(() => server.ctl('get', '/calico/x'))
})

after(async () => {
  await server?.stop()
})

describe('etcd with authentication', {skip: etcdSkipReason, concurrency: true}, () => {
  test('ETCD_USERNAME / ETCD_PASSWORD: pool create and ipam assign work', async () => {
    const env = {ETCD_USERNAME: 'root', ETCD_PASSWORD: 'rootpw'}
    await cli.ok(ep, ['pool', 'create', 'auth-env', '--cidr', '10.130.0.0/24'], {env})
    const ips = lines(
      await cli.ok(ep, ['ipam', 'assign', '--host', 'auth-node', '--pool', 'auth-env', '--handle', 'auth-h'], {env}),
    )
    assert.deepEqual(ips.length, 1)
    assert.match(ips[0]!, /^10\.130\.0\.\d+$/)
    assert.equal(
      value('/calico/ipam/v2/handle/auth-h'),
      `{"block":{"${ips[0]!.replace(/\d+$/, '')}${Number(ips[0]!.split('.')[3]) & ~63}/26":1},"deleted":false}`,
    )
  })

  test('etcdUsername / etcdPassword from the config file work', async () => {
    const cfg = cli.file(
      'auth.cfg',
      configText({datastoreType: 'etcdv3', etcdEndpoints: ep, etcdUsername: 'root', etcdPassword: 'rootpw'}),
    )
    const r = await cli.run(['pool', 'create', 'auth-file', '--cidr', '10.131.0.0/24', '--config', cfg])
    assert.equal(r.status, 0, r.stderr)
    assert.ok(value('/calico/resources/v3/projectcalico.org/ippools/auth-file'))
  })

  test('a wrong password → exit 5, one line naming the endpoint, nothing written', async () => {
    const r = await cli.etcd(ep, ['pool', 'create', 'auth-wrong', '--cidr', '10.132.0.0/24'], {
      env: {ETCD_USERNAME: 'root', ETCD_PASSWORD: 'wrong'},
    })
    assertCleanError(r, 5, ep)
    assert.match(r.stderr, /authentication failed/)
    assert.equal(value('/calico/resources/v3/projectcalico.org/ippools/auth-wrong'), undefined)
  })

  test('no credentials → exit 5', async () => {
    assertCleanError(await cli.etcd(ep, ['ipam', 'show']), 5, ep)
  })

  test("datastore status shows the credentials' sources but never the password", async () => {
    const r = await cli.etcd(ep, ['datastore', 'status', '-o', 'json'], {
      env: {ETCD_USERNAME: 'root', ETCD_PASSWORD: 'rootpw'},
    })
    assert.equal(r.status, 0, r.stderr)
    const st = JSON.parse(r.stdout)
    assert.equal(st.healthy, true)
    assert.equal(st.sources.etcdUsername, 'env')
    assert.equal(st.sources.etcdPassword, 'env')
    assert.doesNotMatch(r.stdout, /rootpw/)
    const table = await cli.etcd(ep, ['datastore', 'status'], {env: {ETCD_USERNAME: 'root', ETCD_PASSWORD: 'rootpw'}})
    assert.equal(table.status, 0)
    assert.doesNotMatch(table.stdout, /rootpw/)
  })
})
