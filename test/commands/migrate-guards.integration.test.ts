// `datastore migrate` must not destroy a target because of a mistake: a missing or empty source is refused
// (exit 3) and never created; --force on a non-empty target lists what it would overwrite and remove and needs
// --yes without a terminal (exit 2 otherwise, nothing changed); --dry-run prints exactly the plan the real run
// then carries out, and changes nothing on either side. Runs against a real etcd.
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {createPools} from '../../src/lib/ipam/pool-admin.ts'
import {EtcdStore} from '../../src/lib/store/etcd.ts'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {Cli, etcdDump} from './etcd-cli.ts'
import {assertCleanError, dumpStore, ROOT, sandbox} from './helpers.ts'

const hasScript = spawnSync('script', ['--version']).status === 0

/** `migrate --force` from `db` on a real pseudo-terminal (util-linux script), typing `answer` at the prompt. */
function migrateOnTty(db: string, answer: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const argv = [
      process.execPath,
      path.join(ROOT, 'bin/run.cjs'),
      'datastore',
      'migrate',
      '--to',
      'etcdv3',
      '--force',
      '--datastore-path',
      db,
      '--etcd-endpoints',
      ep,
      '--config',
      cli.emptyConfig,
    ]
    const env: NodeJS.ProcessEnv = {...process.env, NO_COLOR: '1'}
    for (const k of ['DATASTORE_TYPE', 'ETCD_ENDPOINTS', 'IPAMCTL_CONFIG', 'NODE_OPTIONS']) delete env[k]
    const child = spawn('script', ['-qec', argv.join(' '), '/dev/null'], {env})
    let out = ''
    let answered = false
    const timer = setTimeout(() => {
      child.kill()
      reject(new Error(`no prompt within 20 s; output so far: ${JSON.stringify(out)}`))
    }, 20_000)
    child.stdout.on('data', (d) => {
      out += d
      if (!answered && out.includes('(y/N)')) {
        answered = true
        child.stdin.write(`${answer}\r`)
      }
    })
    child.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
  })
}

let server: EtcdServer
let ep: string
const cli = new Cli()

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  ep = server.endpoint
})
after(async () => {
  await server?.stop()
})

const migrate = (...args: string[]) => cli.etcd(ep, ['datastore', 'migrate', ...args])
/** The whole of etcd under /calico/ plus its revision: equal snapshots = etcd unchanged. */
const etcdState = () => {
  const d = etcdDump(server)
  return {revision: d.revision, kvs: [...d.kvs.entries()]}
}

/** An embedded store with two pools, made through the library. */
async function seededStore(): Promise<string> {
  const sb = sandbox()
  const store = SqliteStore.open(sb.db)
  await createPools(makeCtx(store), [
    {name: 'm4', cidr: '10.80.0.0/24'},
    {name: 'm6', cidr: 'fd00:80::/120'},
  ])
  await store.close()
  return sb.db
}

/** Put `n` keys under `prefix` into etcd, in transactions of 100. */
async function putMany(prefix: string, n: number): Promise<void> {
  const store = await EtcdStore.connect({endpoints: [ep], timeoutMs: 10_000})
  try {
    for (let i = 0; i < n; i += 100) {
      const ops = Array.from({length: Math.min(100, n - i)}, (_, j) => ({
        put: `${prefix}${String(i + j).padStart(6, '0')}`,
        value: '{}',
      }))
      await store.txn([], ops)
    }
  } finally {
    await store.close()
  }
}

describe('datastore migrate guards', {skip: etcdSkipReason, concurrency: false}, () => {
  test('from an empty etcd --to embedded: exit 3, the target file is not created', async () => {
    const target = path.join(cli.dir, 'from-empty', 'ipam.db')
    const before = etcdState()
    assertCleanError(
      await migrate('--to', 'embedded', '--datastore-path', target, '--force', '--yes'),
      3,
      /holds no keys under \/calico\/: nothing to migrate/,
    )
    assert.equal(fs.existsSync(path.dirname(target)), false)
    assert.deepEqual(etcdState(), before)
  })

  test('a mistyped --datastore-path with --force --yes: exit 3 naming the path, etcd untouched, nothing created', async () => {
    await putMany('/calico/ipam/v2/handle/live-', 5)
    const typo = path.join(cli.dir, 'no-such-dir', 'typo.db')
    const before = etcdState()
    assert.equal(before.kvs.length, 5)
    assertCleanError(
      await migrate('--to', 'etcdv3', '--datastore-path', typo, '--force', '--yes'),
      3,
      `embedded datastore ${typo} does not exist`,
    )
    assert.deepEqual(etcdState(), before)
    assert.equal(fs.existsSync(path.dirname(typo)), false)
  })

  test('an existing but empty embedded source: exit 3, etcd untouched, the source unchanged', async () => {
    const sb = sandbox()
    await SqliteStore.open(sb.db).close()
    const src = dumpStore(sb.db)
    const before = etcdState()
    assertCleanError(
      await migrate('--to', 'etcdv3', '--datastore-path', sb.db, '--force', '--yes'),
      3,
      /holds no keys under \/calico\//,
    )
    assert.deepEqual(etcdState(), before)
    assert.equal(dumpStore(sb.db), src)
  })

  test('--force on a non-empty target without a terminal and without --yes: exit 2, nothing changed', async () => {
    const db = await seededStore()
    const before = etcdState()
    const r = await migrate('--to', 'etcdv3', '--datastore-path', db, '--force')
    assertCleanError(r, 2, /Overwrite 0 and remove 5 keys of etcdv3 .*: refusing without confirmation; pass --yes/)
    assert.deepEqual(etcdState(), before)
  })

  test('--force --dry-run prints exactly the plan the real run carries out; the dry run changes nothing', async () => {
    const db = await seededStore()
    server.ctl('put', '/calico/resources/v3/projectcalico.org/ippools/m4', '{"changed":true}')
    const src = dumpStore(db)
    const before = etcdState()
    const dry = await migrate('--to', 'etcdv3', '--datastore-path', db, '--force', '--dry-run')
    assert.equal(dry.status, 0, dry.stderr)
    assert.deepEqual(etcdState(), before, 'the dry run wrote to etcd')
    assert.equal(dumpStore(db), src)
    const dryLines = dry.stdout.trimEnd().split('\n')
    assert.equal(dryLines.at(-1), 'Dry run: nothing was changed.')
    assert.ok(dryLines.includes('Remove 5 keys the source does not have:'), dry.stdout)
    assert.ok(dryLines.includes('Overwrite 1 keys whose value differs:'), dry.stdout)
    assert.ok(dryLines.includes('  /calico/resources/v3/projectcalico.org/ippools/m4'), dry.stdout)
    assert.ok(dryLines.includes('  /calico/ipam/v2/handle/… (5 keys)'), dry.stdout)

    const real = await migrate('--to', 'etcdv3', '--datastore-path', db, '--force', '--yes')
    assert.equal(real.status, 0, real.stderr)
    const realLines = real.stdout.trimEnd().split('\n')
    assert.deepEqual(realLines.slice(0, -1), dryLines.slice(0, -1), 'the real run did what the dry run said')
    assert.match(
      realLines.at(-1)!,
      /^Copied 2 keys from embedded .* to etcdv3 .*; removed 5 keys the source does not have$/,
    )
    const after = etcdDump(server)
    assert.deepEqual([...after.kvs.keys()].sort(), [
      '/calico/resources/v3/projectcalico.org/ippools/m4',
      '/calico/resources/v3/projectcalico.org/ippools/m6',
    ])
    assert.notEqual(after.kvs.get('/calico/resources/v3/projectcalico.org/ippools/m4'), '{"changed":true}')
  })

  test('removing 3000 keys: the plan stays short (grouped by prefix) and is what the real run does', async () => {
    await putMany('/calico/ipam/v2/handle/stale-', 2000)
    await putMany('/calico/ipam/v2/assignment/ipv4/block/10.1.', 1000)
    const db = await seededStore()
    const dry = await migrate('--to', 'etcdv3', '--datastore-path', db, '--force', '--dry-run')
    assert.equal(dry.status, 0, dry.stderr)
    const lines = dry.stdout.trimEnd().split('\n')
    assert.ok(lines.length <= 30, `${lines.length} lines:\n${dry.stdout}`)
    assert.ok(lines.includes('Remove 3000 keys the source does not have:'), dry.stdout)
    assert.ok(lines.includes('  /calico/ipam/v2/handle/… (2000 keys)'), dry.stdout)
    assert.ok(lines.includes('  /calico/ipam/v2/assignment/ipv4/block/… (1000 keys)'), dry.stdout)
    const real = await migrate('--to', 'etcdv3', '--datastore-path', db, '--force', '--yes')
    assert.equal(real.status, 0, real.stderr)
    assert.deepEqual(real.stdout.trimEnd().split('\n').slice(0, -1), lines.slice(0, -1))
    assert.equal(etcdDump(server).kvs.size, 2)
  })

  test('--to embedded --dry-run into a missing file creates nothing; the real run creates it and says so', async () => {
    const target = path.join(cli.dir, 'new-target', 'ipam.db')
    const before = etcdState()
    const dry = await migrate('--to', 'embedded', '--datastore-path', target, '--dry-run')
    assert.equal(dry.status, 0, dry.stderr)
    assert.match(
      dry.stdout,
      new RegExp(
        `^Target: embedded \\(${target.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\), 0 keys under /calico/$`,
        'm',
      ),
    )
    assert.equal(fs.existsSync(path.dirname(target)), false, 'the dry run created the target')
    const real = await migrate('--to', 'embedded', '--datastore-path', target)
    assert.equal(real.status, 0, real.stderr)
    assert.equal(real.stderr, `created new datastore at ${target}\n`)
    assert.deepEqual(real.stdout.trimEnd().split('\n').slice(0, -1), dry.stdout.trimEnd().split('\n').slice(0, -1))
    assert.deepEqual(etcdState(), before, 'etcd is only read')
    assert.equal(dumpStore(target).split('\n').length - 1, 2)
  })

  test('on a terminal: the plan is shown before the question; "no" changes nothing, "yes" mirrors', {
    skip: hasScript ? false : 'util-linux script is not installed',
  }, async () => {
    const sb = sandbox()
    const store = SqliteStore.open(sb.db)
    await createPools(makeCtx(store), [{name: 'tty', cidr: '10.81.0.0/24'}])
    await store.close()
    const before = etcdState()
    assert.ok(before.kvs.length > 0)
    const no = await migrateOnTty(sb.db, 'n')
    const plan = no.indexOf(`Remove ${before.kvs.length} keys the source does not have:`)
    assert.ok(plan >= 0, no)
    assert.ok(
      plan < no.indexOf(`Overwrite 0 and remove ${before.kvs.length} keys of etcdv3`),
      'the list comes before the question',
    )
    assert.match(no, /Aborted; nothing was changed\./)
    assert.deepEqual(etcdState(), before)
    const yes = await migrateOnTty(sb.db, 'y')
    assert.match(yes, /Copied 1 keys from embedded .*; removed \d+ keys the source does not have/)
    assert.deepEqual([...etcdDump(server).kvs.keys()], ['/calico/resources/v3/projectcalico.org/ippools/tty'])
  })
})
