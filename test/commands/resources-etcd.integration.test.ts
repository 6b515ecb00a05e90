// The resource verbs and datastore export/import against a real etcd: the provisioning script runs twice with
// etcd's revision unchanged by the second run, every kind round-trips get → apply, and an export of 10,000
// allocations moves embedded → etcd → embedded with every export byte-identical and every IPAM key equal.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {checkConsistency, Cli, etcdDump} from './etcd-cli.ts'
import {sandbox} from './helpers.ts'
import {provisioningScript} from './provisioning.ts'

let server: EtcdServer
let ep: string
const cli = new Cli()
const etcdOk = (...args: string[]) => cli.ok(ep, args)
const wipe = () => server.ctl('del', '--prefix', '/calico/')

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  ep = server.endpoint
})

after(async () => {
  await server?.stop()
})

describe('resource verbs and export/import on etcd', {skip: etcdSkipReason}, () => {
  test('the provisioning script runs twice; the second run leaves etcd at the same revision', async () => {
    wipe()
    const file = cli.file('provision.yaml', provisioningScript())
    assert.equal(await etcdOk('apply', '-f', file), 'Successfully applied 16 resource(s): 16 created\n')
    const first = etcdDump(server)
    assert.equal(await etcdOk('apply', '-f', file), 'Successfully applied 16 resource(s): 16 unchanged\n')
    const second = etcdDump(server)
    assert.equal(second.revision, first.revision)
    assert.deepEqual([...second.kvs], [...first.kvs])
    // --etcd-endpoints alone selects etcd (no --datastore).
    const r = await cli.run(['get', 'ippools', '-o', 'name', '--etcd-endpoints', ep])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.split('\n').length, 11)
  })

  test('every kind round-trips get → apply on etcd; get -o yaml → disabled → apply stops allocation there', async () => {
    wipe()
    await etcdOk('apply', '-f', cli.file('p2.yaml', provisioningScript()))
    await etcdOk('ipam', 'assign', '--host', 'node-a', '--count', '2')
    const rev = etcdDump(server).revision
    for (const kind of ['ippools', 'ipreservations', 'ipamconfigs', 'nodes'])
      for (const format of ['yaml', 'json']) {
        const text = await etcdOk('get', kind, '-o', format)
        const applied = await cli.etcd(ep, ['apply', '-f', '-'], {input: text})
        assert.equal(applied.status, 0, applied.stderr)
        assert.match(applied.stdout, /: \d+ unchanged\n$/, `${kind} ${format}`)
      }
    assert.equal(etcdDump(server).revision, rev)
    // node-a (rack r0) allocates from the even pools; disable every one but pool-8 through get/edit/apply.
    for (const p of ['pool-0', 'pool-2', 'pool-4', 'pool-6']) {
      const yaml = (await etcdOk('get', 'ippool', p, '-o', 'yaml')).replace('  cidr:', '  disabled: true\n  cidr:')
      await cli.etcd(ep, ['apply', '-f', '-'], {input: yaml})
    }
    const ips = (await etcdOk('ipam', 'assign', '--host', 'node-a', '--count', '40')).trim().split('\n')
    assert.ok(
      ips.slice(2).every((ip) => ip.startsWith('10.108.')),
      ips.join(' '),
    )
  })

  test('10,000 allocations: export embedded → import etcd → export → import embedded, byte-identical', async () => {
    wipe()
    const src = sandbox()
    await src.ok('pool', 'create', 'big', '--cidr', '10.200.0.0/16')
    await src.ok('node', 'create', 'h0', '--label', 'rack=a')
    const t0 = Date.now()
    for (let round = 0; round < 5; round++)
      await Promise.all(
        [0, 1].map((j) =>
          src.ok(
            'ipam',
            'assign',
            '--host',
            `h${round * 2 + j}`,
            '--count',
            '1000',
            '--handle',
            `pod-${round * 2 + j}`,
          ),
        ),
      )
    const allocMs = Date.now() - t0
    const file = path.join(src.dir, 'export.txt')
    let t = Date.now()
    await src.ok('datastore', 'export', '-o', file)
    const exportMs = Date.now() - t
    const text = fs.readFileSync(file, 'utf8')
    t = Date.now()
    await etcdOk('datastore', 'import', '-f', file)
    const importEtcdMs = Date.now() - t
    assert.equal(await etcdOk('datastore', 'export'), text)
    const etcd = etcdDump(server)
    const srcIpam = new Map(src.keys('/calico/ipam/').map((k) => [k, src.value(k)!]))
    assert.deepEqual(
      [...etcd.kvs].filter(([k]) => k.startsWith('/calico/ipam/')),
      [...srcIpam],
    )
    const c = checkConsistency(etcd.kvs)
    assert.deepEqual(c.problems, [])
    assert.equal(c.owners.size, 10_000)
    const back = sandbox()
    const fromEtcd = path.join(back.dir, 'from-etcd.txt')
    await etcdOk('datastore', 'export', '-o', fromEtcd)
    t = Date.now()
    await back.ok('datastore', 'import', '-f', fromEtcd)
    const importEmbeddedMs = Date.now() - t
    assert.equal(await back.ok('datastore', 'export'), text)
    assert.deepEqual(new Map(back.keys('/calico/ipam/').map((k) => [k, back.value(k)!])), srcIpam)
    // block inspect of a block on each store prints the same.
    const block = src.keys('/calico/ipam/v2/assignment/')[7]!.split('/').at(-1)!.replace('-', '/')
    const inspected = await src.ok('block', 'inspect', block)
    assert.equal(await etcdOk('block', 'inspect', block), inspected)
    assert.equal(await back.ok('block', 'inspect', block), inspected)
    process.stderr.write(
      `[10k] ${srcIpam.size} IPAM keys, export ${(text.length / 1e6).toFixed(1)} MB; allocate ${allocMs} ms, export ${exportMs} ms, import to etcd ${importEtcdMs} ms, import to embedded ${importEmbeddedMs} ms\n`,
    )
  })
})
