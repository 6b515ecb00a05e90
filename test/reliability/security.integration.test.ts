// Security promises that need a real etcd:
//  - TLS verification is on by default: a server whose certificate was issued by a CA the client was not told
//    to trust is refused (exit 5, nothing written), even with a valid client certificate;
//  - with authentication on, a wrong or right password is never printed, not even with --debug.
// (test/commands/etcd-tls and etcd-auth cover the working paths; security.test.ts the rest of the promises.)
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {Cli, etcdDump} from '../commands/etcd-cli.ts'
import {assertCleanError} from '../commands/helpers.ts'
import {etcdSkipReason, makeTls, startEtcd, type EtcdServer, type TlsFiles} from '../support/etcd-server.ts'

const cli = new Cli()

describe('etcd TLS: the server certificate is verified by default', {skip: etcdSkipReason}, () => {
  let server: EtcdServer
  let tls: TlsFiles
  let other: TlsFiles
  before(async () => {
    server = await startEtcd({tls: true})
    tls = server.tls!
    const dir = path.join(cli.dir, 'other-ca')
    fs.mkdirSync(dir)
    other = makeTls(dir)
  })
  after(async () => {
    await server?.stop()
  })

  test('a CA that did not issue the server certificate → refused, exit 5, nothing written', async () => {
    const before = etcdDump(server).revision
    const r = await cli.etcd(server.endpoint, ['pool', 'create', 'mitm', '--cidr', '10.140.0.0/24', '--timeout', '3'], {
      env: {ETCD_CA_CERT_FILE: other.ca, ETCD_CERT_FILE: tls.clientCert, ETCD_KEY_FILE: tls.clientKey},
    })
    assertCleanError(r, 5, server.endpoint)
    assert.equal(etcdDump(server).revision, before)
  })

  test('the same request with the right CA works (the refusal was the verification)', async () => {
    const r = await cli.etcd(server.endpoint, ['pool', 'create', 'trusted', '--cidr', '10.141.0.0/24'], {
      env: {ETCD_CA_CERT_FILE: tls.ca, ETCD_CERT_FILE: tls.clientCert, ETCD_KEY_FILE: tls.clientKey},
    })
    assert.equal(r.status, 0, r.stderr)
  })
})

describe('etcd authentication: passwords are never printed', {skip: etcdSkipReason}, () => {
  let server: EtcdServer
  const RIGHT = 'Right-pw-4-root'
  const WRONG = 'Wrong-pw-never-shown'
  before(async () => {
    server = await startEtcd()
    server.ctl('user', 'add', `root:${RIGHT}`, '--interactive=false')
    server.ctl('auth', 'enable')
  })
  after(async () => {
    await server?.stop()
  })
  const clean = (r: {stdout: string; stderr: string}) => {
    for (const pw of [RIGHT, WRONG])
      assert.ok(!(r.stdout + r.stderr).includes(pw), `password printed:\n${r.stdout}${r.stderr}`)
  }

  test('a wrong password with --debug: exit 5, stack trace, no password', async () => {
    const r = await cli.etcd(server.endpoint, ['ipam', 'assign', '--host', 'h', '--debug'], {
      env: {ETCD_USERNAME: 'root', ETCD_PASSWORD: WRONG},
    })
    assert.equal(r.status, 5, r.stderr)
    assert.match(r.stderr, /authentication failed/)
    assert.match(r.stderr, /^\s+at /m)
    clean(r)
  })

  test('the right password: a failing command with --debug and datastore status print no password', async () => {
    const env = {ETCD_USERNAME: 'root', ETCD_PASSWORD: RIGHT}
    const r = await cli.etcd(server.endpoint, ['ipam', 'release', '--handle', 'nope', '--yes', '--debug'], {env})
    assert.equal(r.status, 3, r.stderr)
    clean(r)
    const st = await cli.etcd(server.endpoint, ['datastore', 'status', '-o', 'json', '--debug'], {env})
    assert.equal(JSON.parse(st.stdout).healthy, true)
    clean(st)
  })
})
