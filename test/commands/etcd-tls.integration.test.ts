// TLS with client-certificate auth, configured through ETCD_CA_CERT_FILE / ETCD_CERT_FILE / ETCD_KEY_FILE
// or the config file's etcdCACertFile / etcdCertFile / etcdKeyFile.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer, type TlsFiles} from '../support/etcd-server.ts'
import {Cli, configText, etcdValue} from './etcd-cli.ts'
import {assertCleanError, lines} from './helpers.ts'

let server: EtcdServer
let ep: string
let tls: TlsFiles
const cli = new Cli()
const POOLS = '/calico/resources/v3/projectcalico.org/ippools/'

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd({tls: true})
  ep = server.endpoint
  tls = server.tls!
  assert.match(ep, /^https:/)
})

after(async () => {
  await server?.stop()
})

const tlsEnv = () => ({ETCD_CA_CERT_FILE: tls.ca, ETCD_CERT_FILE: tls.clientCert, ETCD_KEY_FILE: tls.clientKey})

/** pool create + ipam assign through `run`, checked against etcd. */
async function poolAndAssign(
  run: (args: string[]) => ReturnType<Cli['run']>,
  name: string,
  cidr: string,
): Promise<void> {
  const p = await run(['pool', 'create', name, '--cidr', cidr])
  assert.equal(p.status, 0, p.stderr)
  assert.equal(JSON.parse(etcdValue(server, POOLS + name)!).spec.cidr, cidr)
  const a = await run(['ipam', 'assign', '--host', `${name}-node`, '--pool', name, '--handle', name])
  assert.equal(a.status, 0, a.stderr)
  const ips = lines(a.stdout)
  assert.equal(ips.length, 1)
  assert.ok(ips[0]!.startsWith(cidr.replace(/0\/24$/, '')), ips[0])
  assert.ok(etcdValue(server, `/calico/ipam/v2/handle/${name}`), 'handle written')
}

describe('etcd over TLS', {skip: etcdSkipReason, concurrency: true}, () => {
  test('ETCD_CA_CERT_FILE + ETCD_CERT_FILE + ETCD_KEY_FILE: pool create and ipam assign work', async () => {
    await poolAndAssign((args) => cli.etcd(ep, args, {env: tlsEnv()}), 'tls-env', '10.120.0.0/24')
  })

  test('the same files from the config file (etcdCACertFile, etcdCertFile, etcdKeyFile) work', async () => {
    const cfg = cli.file(
      'tls.cfg',
      configText({
        datastoreType: 'etcdv3',
        etcdEndpoints: ep,
        etcdCACertFile: tls.ca,
        etcdCertFile: tls.clientCert,
        etcdKeyFile: tls.clientKey,
      }),
    )
    await poolAndAssign((args) => cli.run([...args, '--config', cfg]), 'tls-file', '10.121.0.0/24')
  })

  test("datastore status reports the TLS files' sources", async () => {
    const r = await cli.etcd(ep, ['datastore', 'status', '-o', 'json'], {env: tlsEnv()})
    assert.equal(r.status, 0, r.stderr)
    const st = JSON.parse(r.stdout)
    assert.equal(st.healthy, true)
    assert.equal(st.location, ep)
    assert.equal(st.sources.etcdCaCertFile, 'env')
    assert.equal(st.sources.etcdCertFile, 'env')
    assert.equal(st.sources.etcdKeyFile, 'env')
  })

  test('without the client certificate → exit 5 naming the endpoint', async () => {
    const r = await cli.etcd(ep, ['ipam', 'assign', '--host', 'nocert', '--timeout', '3'], {
      env: {ETCD_CA_CERT_FILE: tls.ca},
    })
    assertCleanError(r, 5, ep)
    assert.equal(etcdValue(server, '/calico/resources/v3/projectcalico.org/nodes/nocert'), undefined)
  })

  test('without the CA (server not trusted) → exit 5', async () => {
    const r = await cli.etcd(ep, ['ipam', 'show', '--timeout', '3'], {
      env: {ETCD_CERT_FILE: tls.clientCert, ETCD_KEY_FILE: tls.clientKey},
    })
    assertCleanError(r, 5, ep)
  })

  test('plain http (no TLS files) to the TLS port → exit 5', async () => {
    const plain = ep.replace(/^https:/, 'http:')
    assertCleanError(await cli.etcd(plain, ['ipam', 'show', '--timeout', '3']), 5, plain)
  })

  test('ETCD_KEY_FILE without ETCD_CERT_FILE → exit 2, and the reverse', async () => {
    const msg = /etcd client TLS needs both a key file and a certificate file/
    assertCleanError(
      await cli.etcd(ep, ['ipam', 'show'], {env: {ETCD_CA_CERT_FILE: tls.ca, ETCD_KEY_FILE: tls.clientKey}}),
      2,
      msg,
    )
    assertCleanError(
      await cli.etcd(ep, ['ipam', 'show'], {env: {ETCD_CA_CERT_FILE: tls.ca, ETCD_CERT_FILE: tls.clientCert}}),
      2,
      msg,
    )
  })

  test('an unreadable certificate file → exit 2 naming it', async () => {
    const missing = `${cli.dir}/missing.crt`
    assertCleanError(await cli.etcd(ep, ['ipam', 'show'], {env: {...tlsEnv(), ETCD_CA_CERT_FILE: missing}}), 2, missing)
  })

  test('TLS commands keep stderr clean: nothing on success, one line on failure', async () => {
    const ok = await cli.etcd(ep, ['ipam', 'show'], {env: tlsEnv()})
    assert.equal(ok.status, 0)
    assert.equal(ok.stderr, '')
    assertCleanError(await cli.etcd(ep, ['ipam', 'show', '--timeout', '3'], {env: {ETCD_CA_CERT_FILE: tls.ca}}), 5, ep)
  })
})
