// The CLI against a real etcd: datastore selection and its precedence (flag > env > config file), the config
// file's validation, `datastore status`, and bounded failures (unreachable and black-hole endpoints).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, freePort, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {Cli, configText, etcdDump, etcdValue} from './etcd-cli.ts'
import {assertCleanError} from './helpers.ts'

const POOLS = '/calico/resources/v3/projectcalico.org/ippools/'

let server: EtcdServer
let ep: string
let dead: string // nothing listens here
const cli = new Cli()

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  ep = server.endpoint
  dead = `http://127.0.0.1:${await freePort()}`
})

after(async () => {
  await server?.stop()
})

/** Create a pool through the given selection and prove it landed in the test's etcd. */
async function createPoolVia(
  name: string,
  cidr: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<void> {
  assert.equal(etcdValue(server, POOLS + name), undefined)
  const r = await cli.run(['pool', 'create', name, '--cidr', cidr, ...args], {env})
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, `Successfully created IP pool ${name} (${cidr}, block size /26)\n`)
  assert.equal(r.stderr, '')
  const stored = JSON.parse(etcdValue(server, POOLS + name) ?? 'null')
  assert.equal(stored?.spec?.cidr, cidr, `pool ${name} is not in etcd`)
}

/** Rows of a boxed PROPERTY/VALUE table. */
function tableRows(out: string): Map<string, string> {
  const rows = new Map<string, string>()
  for (const l of out.split('\n')) {
    const m = /^\| (\S.*?)\s+\| (.*?)\s*\|$/.exec(l)
    if (m && m[1] !== 'PROPERTY') rows.set(m[1]!, m[2]!)
  }
  return rows
}

describe('datastore selection and precedence', {skip: etcdSkipReason, concurrency: true}, () => {
  test('--datastore etcdv3 --etcd-endpoints selects etcd', async () => {
    await createPoolVia('sel-flags', '10.101.0.0/24', ['--datastore', 'etcdv3', '--etcd-endpoints', ep])
  })

  test('DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=… selects etcd', async () => {
    await createPoolVia('sel-env', '10.102.0.0/24', [], {DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: ep})
  })

  test('a config file with datastoreType etcdv3, via --config', async () => {
    const cfg = cli.file('sel-file.cfg', configText({datastoreType: 'etcdv3', etcdEndpoints: ep}))
    await createPoolVia('sel-file', '10.103.0.0/24', ['--config', cfg])
  })

  test('a config file via IPAMCTL_CONFIG', async () => {
    const cfg = cli.file('sel-envfile.cfg', configText({datastoreType: 'etcdv3', etcdEndpoints: ep}))
    await createPoolVia('sel-envfile', '10.104.0.0/24', [], {IPAMCTL_CONFIG: cfg})
  })

  test('--etcd-endpoints beats ETCD_ENDPOINTS (env dead, flag live)', async () => {
    await createPoolVia('sel-flag-env', '10.105.0.0/24', ['--etcd-endpoints', ep], {
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: dead,
    })
  })

  test('--datastore etcdv3 beats DATASTORE_TYPE=embedded and a file saying embedded', async () => {
    const cfg = cli.file('sel-embedded.cfg', configText({datastoreType: 'embedded'}))
    await createPoolVia(
      'sel-type-flag',
      '10.106.0.0/24',
      ['--config', cfg, '--datastore', 'etcdv3', '--etcd-endpoints', ep],
      {DATASTORE_TYPE: 'embedded'},
    )
  })

  test('ETCD_ENDPOINTS beats the file (file dead, env live); DATASTORE_TYPE beats the file', async () => {
    const cfg = cli.file('sel-env-file.cfg', configText({datastoreType: 'embedded', etcdEndpoints: dead}))
    await createPoolVia('sel-env-file', '10.107.0.0/24', ['--config', cfg], {
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: ep,
    })
  })

  test("the flag really wins: flag dead, env live → exit 5 naming the flag's endpoint", async () => {
    const r = await cli.run(['ipam', 'show', '--etcd-endpoints', dead], {
      env: {DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: ep},
    })
    assertCleanError(r, 5, dead)
  })

  test("the env really wins over the file: env dead, file live → exit 5 naming the env's endpoint", async () => {
    const cfg = cli.file('env-dead.cfg', configText({datastoreType: 'etcdv3', etcdEndpoints: ep}))
    const r = await cli.run(['ipam', 'show', '--config', cfg], {env: {ETCD_ENDPOINTS: dead}})
    assertCleanError(r, 5, dead)
  })

  test('without any selection the embedded store is used, not etcd', async () => {
    const r = await cli.run(['datastore', 'status', '-o', 'json'], {env: {ETCD_ENDPOINTS: ep}})
    // The embedded file (IPAMCTL_DATASTORE_PATH) does not exist: status reports it missing (exit 3) and a read
    // does not create it.
    assert.equal(r.status, 3, r.stderr)
    const st = JSON.parse(r.stdout)
    assert.equal(st.type, 'embedded')
    assert.equal(st.sources.datastoreType, 'default')
    assert.equal(st.location, cli.db)
    assert.equal(st.missing, true)
    assert.equal(fs.existsSync(cli.db), false)
  })
})

describe('config file and flag validation', {skip: etcdSkipReason, concurrency: true}, () => {
  test('a missing --config file → exit 2 naming it', async () => {
    const missing = `${cli.dir}/no-such.cfg`
    assertCleanError(
      await cli.run(['ipam', 'show', '--config', missing, '--datastore', 'etcdv3', '--etcd-endpoints', ep]),
      2,
      missing,
    )
  })

  test('a missing IPAMCTL_CONFIG file → exit 2 naming it', async () => {
    const missing = `${cli.dir}/no-such-env.cfg`
    assertCleanError(
      await cli.run(['ipam', 'show'], {env: {IPAMCTL_CONFIG: missing, DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: ep}}),
      2,
      missing,
    )
  })

  test('a config file with the wrong kind → exit 2', async () => {
    const cfg = cli.file('kind.cfg', configText({datastoreType: 'etcdv3', etcdEndpoints: ep}, 'IPPool'))
    assertCleanError(await cli.run(['ipam', 'show', '--config', cfg]), 2, /kind must be CalicoAPIConfig/)
  })

  test('datastoreType: kubernetes → exit 2 with a clear message', async () => {
    const cfg = cli.file('k8s.cfg', configText({datastoreType: 'kubernetes'}))
    assertCleanError(
      await cli.run(['ipam', 'show', '--config', cfg]),
      2,
      /kubernetes datastore is not supported; use etcdv3 or embedded/,
    )
    assertCleanError(
      await cli.run(['ipam', 'show'], {env: {DATASTORE_TYPE: 'kubernetes'}}),
      2,
      /kubernetes datastore is not supported/,
    )
  })

  test('invalid endpoint syntax → exit 2 (flag, env and file)', async () => {
    assertCleanError(
      await cli.etcd('127.0.0.1:2379', ['ipam', 'show']),
      2,
      /invalid etcd endpoint "127\.0\.0\.1:2379": expected http\(s\):\/\/HOST:PORT/,
    )
    assertCleanError(
      await cli.run(['ipam', 'show', '--datastore', 'etcdv3'], {env: {ETCD_ENDPOINTS: 'ftp://127.0.0.1:2379'}}),
      2,
      /etcd endpoints \(env\): invalid etcd endpoint/,
    )
    const cfg = cli.file('bad-ep.cfg', configText({datastoreType: 'etcdv3', etcdEndpoints: 'http://127.0.0.1'}))
    assertCleanError(
      await cli.run(['ipam', 'show', '--config', cfg]),
      2,
      /etcd endpoints \(file\): invalid etcd endpoint/,
    )
  })

  test('--timeout 0 → exit 2', async () => {
    assertCleanError(
      await cli.etcd(ep, ['ipam', 'show', '--timeout', '0']),
      2,
      /--timeout must be between 1 and 3600 seconds/,
    )
  })
})

describe('datastore status', {skip: etcdSkipReason, concurrency: true}, () => {
  // Runs after the selection tests; nothing writes to etcd while these run, so counts are exact.
  test('table: type, endpoint with their sources, config file, healthy, revision, key counts', async () => {
    const cfg = cli.file('status-table.cfg', configText({}))
    const r = await cli.run(['datastore', 'status', '--config', cfg], {
      env: {DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: ep},
    })
    assert.equal(r.status, 0, r.stderr)
    const dump = etcdDump(server)
    const rows = tableRows(r.stdout)
    assert.equal(rows.get('Datastore'), 'etcdv3 (env)')
    assert.equal(rows.get('Endpoints'), `${ep} (env)`)
    assert.equal(rows.get('Config file'), cfg)
    assert.equal(rows.get('Healthy'), 'yes')
    assert.equal(rows.get('Revision'), dump.revision)
    assert.match(rows.get('Latency') ?? '', /^\d+(\.\d+)? ms$/)
    const pools = [...dump.kvs.keys()].filter((k) => k.startsWith(POOLS)).length
    assert.ok(pools >= 7, `${pools} pools`)
    assert.equal(rows.get('Keys'), `${dump.kvs.size} (pools ${pools}, blocks 0, affinities 0, handles 0, nodes 0)`)
  })

  test('table: flag and file sources', async () => {
    const cfg = cli.file('status-file.cfg', configText({datastoreType: 'etcdv3'}))
    const r = await cli.run(['datastore', 'status', '--config', cfg, '--etcd-endpoints', ep])
    assert.equal(r.status, 0, r.stderr)
    const rows = tableRows(r.stdout)
    assert.equal(rows.get('Datastore'), 'etcdv3 (file)')
    assert.equal(rows.get('Endpoints'), `${ep} (flag)`)
  })

  test("-o json: every setting's source, healthy, revision as etcd reports it", async () => {
    const cfg = cli.file('status-json.cfg', configText({datastoreType: 'etcdv3', etcdEndpoints: dead}))
    const r = await cli.run(['datastore', 'status', '-o', 'json', '--config', cfg, '--timeout', '7'], {
      env: {ETCD_ENDPOINTS: ep},
    })
    assert.equal(r.status, 0, r.stderr)
    const dump = etcdDump(server)
    const st = JSON.parse(r.stdout)
    assert.equal(st.type, 'etcdv3')
    assert.equal(st.location, ep)
    assert.equal(st.configFile, cfg)
    assert.deepEqual(st.sources, {
      datastoreType: 'file',
      etcdEndpoints: 'env',
      datastorePath: 'env', // IPAMCTL_DATASTORE_PATH, set by the test runner
      etcdKeyFile: 'default',
      etcdCertFile: 'default',
      etcdCaCertFile: 'default',
      etcdUsername: 'default',
      etcdPassword: 'default',
      timeout: 'flag',
    })
    assert.equal(st.healthy, true)
    assert.equal(String(st.revision), dump.revision)
    assert.equal(st.keys.total, dump.kvs.size)
    assert.equal(st.error, undefined)
  })

  test('against a dead endpoint: Healthy no, exit 5, one error line', async () => {
    const r = await cli.etcd(dead, ['datastore', 'status'])
    assert.equal(r.status, 5, r.stderr)
    const rows = tableRows(r.stdout)
    assert.match(rows.get('Healthy') ?? '', /^no: etcd at http:\/\/127\.0\.0\.1:\d+ is unavailable/)
    assert.equal(rows.get('Endpoints'), `${dead} (flag)`)
    assert.equal(rows.has('Revision'), false)
    assertCleanError({...r, stdout: ''}, 5, dead)
    const j = await cli.etcd(dead, ['datastore', 'status', '-o', 'json'])
    assert.equal(j.status, 5)
    const st = JSON.parse(j.stdout)
    assert.equal(st.healthy, false)
    assert.ok(st.error.includes(dead), st.error)
    assert.equal(st.revision, undefined)
  })
})

describe('unreachable endpoint (nothing listening)', {skip: etcdSkipReason, concurrency: true}, () => {
  // Bounds, not speed: the command must give up within its --timeout (plus process start-up on a busy
  // machine) instead of hanging. Refused connections normally fail in well under a second.
  test('ipam show exits 5 within its timeout, one line naming the endpoint', async () => {
    const r = await cli.etcd(dead, ['ipam', 'show', '--timeout', '3'])
    assertCleanError(r, 5, dead)
    assert.match(r.stderr, /^Error: etcd at http:\/\/127\.0\.0\.1:\d+ is unavailable/)
    assert.ok(r.ms < 3000 + 4000, `took ${r.ms} ms`)
  })

  test('ipam assign exits 5 within its timeout', async () => {
    const r = await cli.etcd(dead, ['ipam', 'assign', '--host', 'n1', '--timeout', '3'])
    assertCleanError(r, 5, dead)
    assert.ok(r.ms < 3000 + 4000, `took ${r.ms} ms`)
  })

  test('--debug adds the stack trace (and only then)', async () => {
    const r = await cli.etcd(dead, ['ipam', 'show', '--debug'])
    assert.equal(r.status, 5)
    assert.match(r.stderr, /^Error: etcd at .* is unavailable/)
    assert.match(r.stderr, /^\s+at /m)
  })
})

describe('black-hole endpoint (accepts, never answers)', {skip: etcdSkipReason, concurrency: true}, () => {
  let hole: net.Server
  let holeEp: string
  const sockets = new Set<net.Socket>()

  before(async () => {
    hole = net.createServer((s) => {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => sockets.delete(s))
    })
    await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve))
    holeEp = `http://127.0.0.1:${(hole.address() as net.AddressInfo).port}`
  })

  after(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((r) => hole?.close(r))
  })

  test('--timeout 2: ipam show exits 5 by itself well within timeout + start-up', async () => {
    const r = await cli.etcd(holeEp, ['ipam', 'show', '--timeout', '2'])
    assertCleanError(r, 5, holeEp)
    assert.match(r.stderr, /no answer within 2 s/)
    assert.ok(r.ms >= 1900, `took only ${r.ms} ms: did the timeout apply?`)
    assert.ok(r.ms < 9000, `took ${r.ms} ms`)
  })

  test('--timeout 2: ipam assign exits 5 by itself well within timeout + start-up', async () => {
    const r = await cli.etcd(holeEp, ['ipam', 'assign', '--host', 'n1', '--timeout', '2'])
    assertCleanError(r, 5, holeEp)
    assert.ok(r.ms < 9000, `took ${r.ms} ms`)
  })

  test('--timeout 2: datastore status prints Healthy no, exit 5 well within timeout + start-up', async () => {
    const r = await cli.etcd(holeEp, ['datastore', 'status', '--timeout', '2'])
    assert.equal(r.status, 5, r.stderr)
    assert.match(tableRows(r.stdout).get('Healthy') ?? '', /^no: .*no answer within 2 s/)
    assertCleanError({...r, stdout: ''}, 5, holeEp)
    assert.ok(r.ms < 9000, `took ${r.ms} ms`)
  })
})
