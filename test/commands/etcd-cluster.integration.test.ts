// ipamctl on a real three-member etcd cluster selected with ETCD_ENDPOINTS=a,b,c: every endpoint is used, a
// member that is dead (nothing listening) or frozen (SIGSTOP: connected, silent) costs a command at most half a
// request timeout, and `datastore status` lists each member (reachable, leader, db size, raft index).
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {EtcdStore} from '../../src/lib/store/etcd.ts'
import {type EtcdCluster, startCluster} from '../support/etcd-cluster.ts'
import {etcdSkipReason} from '../support/etcd-server.ts'
import {Cli} from './etcd-cli.ts'
import {assertCleanError, lines} from './helpers.ts'

/** Process start and exit of the CLI on a loaded 2-core machine. */
const SLACK_MS = 4000

describe('a three-member etcd cluster through ETCD_ENDPOINTS', {skip: etcdSkipReason}, () => {
  let cluster: EtcdCluster
  const cli = new Cli()
  const env = () => ({DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: cluster.endpoints})
  const run = (args: readonly string[]) => cli.run(args, {env: env()})

  before(async () => {
    cluster = await startCluster()
    const r = await run(['pool', 'create', 'p', '--cidr', '10.60.0.0/16'])
    assert.equal(r.status, 0, r.stderr)
  })
  after(async () => {
    await cluster?.stop()
  })

  test('datastore status lists every member: one leader, db size and raft index', async () => {
    const r = await run(['datastore', 'status', '-o', 'json'])
    assert.equal(r.status, 0, r.stderr)
    const st = JSON.parse(r.stdout) as {
      healthy: boolean
      members: {endpoint: string; reachable: boolean; leader: boolean; dbSizeBytes: number; raftIndex: number}[]
    }
    assert.equal(st.healthy, true)
    assert.deepEqual(
      st.members.map((m) => m.endpoint),
      cluster.members.map((m) => m.endpoint),
    )
    assert.ok(st.members.every((m) => m.reachable && m.dbSizeBytes > 0 && Number(m.raftIndex) > 0))
    const leader = await cluster.leader()
    assert.deepEqual(
      st.members.filter((m) => m.leader).map((m) => m.endpoint),
      [leader!.endpoint],
    )
    const table = await run(['datastore', 'status'])
    assert.equal(table.status, 0)
    assert.equal((table.stdout.match(/Member \d/g) ?? []).length, 3)
    assert.match(table.stdout, new RegExp(`${leader!.endpoint}: leader, db [\\d.]+ MB, raft index \\d+`))
  })

  test('a dead first member: commands succeed, within one request timeout, and status lists it', async () => {
    const dead = cluster.members[0]!
    await dead.kill()
    try {
      await cluster.waitLeader()
      for (let i = 0; i < 3; i++) {
        const r = await run(['ipam', 'assign', '--host', 'dead-first', '--handle', `d${i}`, '--timeout', '2'])
        assert.equal(r.status, 0, r.stderr)
        assert.equal(lines(r.stdout).length, 1)
        assert.ok(r.ms < 2000 + SLACK_MS, `took ${r.ms} ms`)
      }
      const st = await run(['datastore', 'status'])
      assert.equal(st.status, 0, st.stderr)
      assert.match(st.stdout, new RegExp(`Member 1 .*${dead.endpoint}: unreachable`))
    } finally {
      await dead.start()
      await cluster.waitLeader()
    }
  })

  test('a frozen first member (SIGSTOP): reads move on after half the timeout, later requests skip it', async () => {
    const frozen = cluster.members[0]!
    const others = cluster.members.slice(1).map((m) => m.endpoint)
    frozen.pause()
    try {
      await cluster.waitLeader()
      const store = await EtcdStore.connect({endpoints: [frozen.endpoint, ...others], timeoutMs: 2000})
      try {
        // Whichever member the store starts at, a read answers within one timeout, and after the first one
        // that met the frozen member, no request waits for it again.
        for (let i = 0; i < 6; i++) {
          const t = Date.now()
          await store.get('/calico/resources/v3/projectcalico.org/ippools/p')
          const ms = Date.now() - t
          assert.ok(ms < 2000, `read ${i} took ${ms} ms`)
        }
        const t = Date.now()
        const w = await store.txn([], [{put: '/ipamctl-test/frozen', value: 'x'}])
        assert.equal(w.succeeded, true)
        assert.ok(Date.now() - t < 1000, `write took ${Date.now() - t} ms`)
        const members = await store.members()
        assert.deepEqual(
          members.map((m) => m.reachable),
          [false, true, true],
        )
      } finally {
        await store.close()
      }
      const r = await run(['ipam', 'assign', '--host', 'frozen-first', '--handle', 'f0', '--timeout', '2'])
      assert.equal(r.status, 0, r.stderr)
      assert.ok(r.ms < 2000 + SLACK_MS, `took ${r.ms} ms`)
    } finally {
      frozen.resume()
      await cluster.waitLeader()
    }
  })

  test('every member down: one clean line naming all endpoints, within the timeout', async () => {
    for (const m of cluster.members) await m.kill()
    try {
      const r = await run(['ipam', 'show', '--timeout', '2'])
      assertCleanError(
        r,
        5,
        /^Error: etcd at http:\/\/127\.0\.0\.1:\d+,http:\/\/127\.0\.0\.1:\d+,http.* is unavailable/,
      )
      assert.ok(r.ms < 2000 + SLACK_MS, `took ${r.ms} ms`)
    } finally {
      await Promise.all(cluster.members.map((m) => m.start()))
      await cluster.waitLeader()
    }
  })
})
