// `datastore migrate` between the embedded SQLite file and a real etcd: byte-for-byte copies both ways,
// refusal of a non-empty target, --force mirroring, and allocation carrying on after the move.
import assert from 'node:assert/strict'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {checkConsistency, Cli, etcdDump, ipKey} from './etcd-cli.ts'
import {assertCleanError, dumpStore, lines, sandbox, type Sandbox} from './helpers.ts'

let server: EtcdServer
let ep: string
const cli = new Cli()
let src: Sandbox

/** The embedded store's /calico/ keys and values, as etcdDump() gives etcd's. */
function sqliteKvs(sb: Sandbox): Map<string, string> {
  return new Map(sb.keys('/calico/').map((k) => [k, sb.value(k)!]))
}

const embedded = (db: string, ...args: string[]) =>
  cli.run([...args, '--datastore', 'embedded', '--datastore-path', db])
async function embeddedOk(db: string, ...args: string[]): Promise<string> {
  const r = await embedded(db, ...args)
  assert.equal(r.status, 0, `ipamctl ${args.join(' ')} failed (${r.status}):\n${r.stderr}`)
  return r.stdout
}
const etcdOk = (...args: string[]) => cli.ok(ep, args)

const assigned: string[] = []

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  ep = server.endpoint
  src = sandbox()
  // Seed the embedded store through the CLI: pools of both families, a labelled node, a config, allocations.
  // The first command creates the file alone: several processes opening a brand-new file at once
  // sometimes stall for seconds (see the report); that is not what this file tests.
  await embeddedOk(src.db, 'pool', 'create', 'm4', '--cidr', '10.80.0.0/24')
  await Promise.all([
    embeddedOk(src.db, 'pool', 'create', 'm6', '--cidr', 'fd00:80::/120'),
    embeddedOk(src.db, 'node', 'create', 'node-a', '--label', 'rack=a'),
    embeddedOk(src.db, 'ipam', 'configure', '--max-blocks-per-host', '5', '--strictaffinity', 'true'),
  ])
  const outs = await Promise.all(
    (
      [
        ['node-a', 3, 1, 'ha'],
        ['node-b', 2, 2, 'hb'],
        ['node-d', 1, 0, 'hc'],
      ] as const
    ).map(([host, n4, n6, handle]) =>
      embeddedOk(
        src.db,
        'ipam',
        'assign',
        '--host',
        host,
        '--count',
        String(n4),
        '--count6',
        String(n6),
        '--handle',
        handle,
      ),
    ),
  )
  for (const o of outs) assigned.push(...lines(o))
  assert.equal(assigned.length, 9)
})

after(async () => {
  await server?.stop()
})

describe('datastore migrate', {skip: etcdSkipReason}, () => {
  test('--to etcdv3 copies every key and value byte for byte', async () => {
    const source = sqliteKvs(src)
    assert.ok(source.size >= 12, `${source.size} keys seeded`)
    assert.ok(source.has('/calico/ipam/v2/config'), 'the IPAM config is part of the copy')
    const before = src.dump()
    const out = await etcdOk('datastore', 'migrate', '--to', 'etcdv3', '--datastore-path', src.db)
    // The plan (source, target, what is written), then what was done.
    assert.match(
      out,
      new RegExp(
        `^Source: embedded \\(.*\\), ${source.size} keys under /calico/\\nTarget: etcdv3 .*, 0 keys under /calico/\\nWrite ${source.size} keys: ${source.size} new, 0 overwritten, 0 already equal\\n`,
      ),
    )
    assert.match(
      out,
      new RegExp(
        `\\nCopied ${source.size} keys from .*${src.db.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}.* to etcdv3 \\(${ep.replace(/[./]/g, '\\$&')}\\)\\n$`,
      ),
    )
    const {kvs} = etcdDump(server)
    assert.deepEqual([...kvs.entries()], [...source.entries()])
    assert.equal(src.dump(), before, 'the source is not modified')
    assert.deepEqual(checkConsistency(kvs).problems, [])
  })

  test('again → exit 4 "refusing", and nothing changes on either side', async () => {
    const etcdBefore = etcdDump(server)
    const srcBefore = src.dump()
    const r = await cli.etcd(ep, ['datastore', 'migrate', '--to', 'etcdv3', '--datastore-path', src.db])
    assertCleanError(r, 4, /already holds \d+ keys under \/calico\/; refusing to overwrite them \(use --force/)
    const etcdAfter = etcdDump(server)
    assert.equal(etcdAfter.revision, etcdBefore.revision, 'etcd revision moved')
    assert.deepEqual([...etcdAfter.kvs.entries()], [...etcdBefore.kvs.entries()])
    assert.equal(src.dump(), srcBefore)
  })

  test('--force makes etcd an exact mirror again (stale keys removed, changed values restored)', async () => {
    server.ctl('put', '/calico/ipam/v2/handle/stale', '{"block":{"10.80.0.192/26":1},"deleted":false}')
    server.ctl('put', '/calico/ipam/v2/config', '{"strict_affinity":false}')
    server.ctl('put', '/not-calico/keep-me', 'x')
    const out = await etcdOk('datastore', 'migrate', '--to', 'etcdv3', '--datastore-path', src.db, '--force', '--yes')
    assert.match(out, /\nCopied \d+ keys from .* to .*; removed 1 keys the source does not have\n$/)
    assert.deepEqual([...etcdDump(server).kvs.entries()], [...sqliteKvs(src).entries()])
    assert.equal(
      etcdDump(server, '/not-calico/').kvs.get('/not-calico/keep-me'),
      'x',
      'keys outside /calico/ are not touched',
    )
  })

  test('--to embedded into a new file copies back; ipam show --show-blocks is identical on both', async () => {
    const back = path.join(cli.dir, 'back.db')
    const out = await etcdOk('datastore', 'migrate', '--to', 'embedded', '--datastore-path', back)
    assert.match(out, /\nCopied \d+ keys from etcdv3 .* to .*back\.db/)
    const copied = new Map(
      dumpStore(back)
        .split('\n')
        .slice(1)
        .map((l) => /^(\S+) @\d+ (.*)$/.exec(l)!)
        .map((m) => [m[1]!, m[2]!] as const),
    )
    assert.deepEqual([...copied.entries()], [...etcdDump(server).kvs.entries()])
    const [onEtcd, onFile, jsonEtcd, jsonFile] = await Promise.all([
      etcdOk('ipam', 'show', '--show-blocks'),
      embeddedOk(back, 'ipam', 'show', '--show-blocks'),
      etcdOk('ipam', 'show', '--show-blocks', '-o', 'json'),
      embeddedOk(back, 'ipam', 'show', '--show-blocks', '-o', 'json'),
    ])
    assert.equal(onFile, onEtcd)
    assert.equal(jsonFile, jsonEtcd)
    assert.match(onEtcd, /10\.80\.0\.0\/24/)
    // Into a non-empty file without --force: refused.
    assertCleanError(
      await cli.etcd(ep, ['datastore', 'migrate', '--to', 'embedded', '--datastore-path', back]),
      4,
      /refusing/,
    )
  })

  test('ipam assign on the migrated etcd continues without duplicates', async () => {
    const more = [
      ...lines(
        await etcdOk('ipam', 'assign', '--host', 'node-a', '--count', '3', '--count6', '1', '--handle', 'after-a'),
      ),
      ...lines(await etcdOk('ipam', 'assign', '--host', 'node-c', '--count', '2', '--handle', 'after-c')),
    ]
    assert.equal(more.length, 6)
    const all = [...assigned, ...more].map(ipKey)
    assert.equal(new Set(all).size, all.length, `duplicate addresses: ${[...assigned, ...more].join(' ')}`)
    const {kvs} = etcdDump(server)
    const c = checkConsistency(kvs)
    assert.deepEqual(c.problems, [])
    for (const ip of more.slice(0, 4)) assert.equal(c.owners.get(ipKey(ip)), 'after-a', ip)
    for (const ip of assigned) assert.ok(c.owners.has(ipKey(ip)), `${ip} lost`)
    // The labelled node and the strict-affinity config came along: node-a stays on its own blocks.
    assert.match(kvs.get('/calico/resources/v3/projectcalico.org/nodes/node-a')!, /"rack":"a"/)
  })
})
