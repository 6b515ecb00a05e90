// etcd goes away and comes back while a steady stream of `ipam assign --timeout 2` commands runs in two lanes.
// test/commands/etcd-outage.integration.test.ts covers a kill during a burst of concurrent commands; this adds
// a *hung* etcd (SIGSTOP: connections stay open, nothing answers, so only our deadlines end a command), its
// recovery (SIGCONT), then a kill and a restart, all under one uninterrupted stream:
//  - every command either succeeds or fails with exit 5 and one clean line, within the timeout plus slack;
//  - a command that ran entirely while etcd was down failed, one that ran entirely while it was up succeeded;
//  - afterwards the data is consistent (helpers.ts assertConsistent), every successful command's addresses
//    belong to its handle, and a failed command owns none or all of its addresses (a request etcd received
//    just before freezing may commit after the client gave up: its outcome is unknown, never half-written).
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {ipsByHandle} from '../../src/lib/ipam/query.ts'
import {EtcdStore} from '../../src/lib/store/etcd.ts'
import {Cli} from '../commands/etcd-cli.ts'
import {assertCleanError, lines} from '../commands/helpers.ts'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {assertConsistent, sleep} from './helpers.ts'

const TIMEOUT_S = 2
/** Process start and exit on a loaded 2-core machine. */
const SLACK_MS = 6000
const COUNT = 2

let server: EtcdServer
const cli = new Cli()

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  await cli.ok(server.endpoint, ['pool', 'create', 'stream', '--cidr', '10.91.0.0/20'])
})
after(async () => {
  server?.signal('SIGCONT')
  await server?.stop()
})

interface Run {
  handle: string
  start: number
  end: number
  status: number | null
  stdout: string
  stderr: string
}

/** When etcd was unable to answer: [from, to) intervals. */
const down: [number, number][] = []
const overlapsDown = (r: Run) => down.some(([a, b]) => r.start < b && r.end > a)
const insideDown = (r: Run) => down.some(([a, b]) => r.start >= a && r.end <= b)

describe('etcd hung, resumed, killed and restarted under a stream of allocations', {skip: etcdSkipReason}, () => {
  const runs: Run[] = []
  let stop = false
  let n = 0

  async function lane(id: number): Promise<void> {
    while (!stop) {
      const handle = `s${id}-${n++}`
      const start = Date.now()
      const r = await cli.etcd(server.endpoint, [
        'ipam',
        'assign',
        '--host',
        `lane-${id}`,
        '--count',
        String(COUNT),
        '--handle',
        handle,
        '--timeout',
        String(TIMEOUT_S),
      ])
      runs.push({handle, start, end: Date.now(), status: r.status, stdout: r.stdout, stderr: r.stderr})
    }
  }
  const since = (t: number, ok: boolean) => runs.filter((r) => r.start >= t && (r.status === 0) === ok).length
  async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms
    while (!cond()) {
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for ${what}; runs so far:\n${runs.map((r) => `${r.handle} ${r.status} ${r.end - r.start} ms`).join('\n')}`,
        )
      await sleep(50)
    }
  }

  test('the stream fails cleanly while etcd is down and resumes when it is back', {timeout: 180_000}, async (t) => {
    const lanes = [lane(0), lane(1)]
    try {
      let mark = Date.now()
      await until('allocations while etcd is up', () => since(mark, true) >= 2)

      mark = Date.now()
      server.signal('SIGSTOP')
      await until('failures while etcd is hung', () => since(mark, false) >= 2)
      server.signal('SIGCONT')
      down.push([mark, Date.now()])

      mark = Date.now()
      await until('allocations after SIGCONT', () => since(mark, true) >= 2)

      mark = Date.now()
      await server.kill()
      await until('failures while etcd is dead', () => since(mark, false) >= 2)
      const restarting = Date.now()
      await server.start()
      down.push([mark, Date.now()])
      t.diagnostic(`restart took ${Date.now() - restarting} ms`)

      mark = Date.now()
      await until('allocations after the restart', () => since(mark, true) >= 2)
    } finally {
      stop = true
      await Promise.all(lanes)
    }
    t.diagnostic(
      runs.map((r) => `${r.handle}: exit ${r.status} in ${r.end - r.start} ms ${r.stderr.trim()}`).join('\n'),
    )

    for (const r of runs) {
      const ctx = `${r.handle}: exit ${r.status} after ${r.end - r.start} ms\n${r.stderr}${r.stdout}`
      assert.ok(r.status === 0 || r.status === 5, ctx)
      assert.ok(r.end - r.start < TIMEOUT_S * 1000 + SLACK_MS, `too slow: ${ctx}`)
      if (r.status === 5) {
        assertCleanError(r, 5, /^Error: etcd at http:\/\/127\.0\.0\.1:\d+ is unavailable/)
        assert.ok(overlapsDown(r), `failed while etcd was up: ${ctx}`)
      } else {
        assert.equal(lines(r.stdout).length, COUNT, ctx)
        assert.ok(!insideDown(r), `succeeded while etcd was down: ${ctx}`)
      }
    }
  })

  test('afterwards: consistent, every success owns its addresses, every failure owns none or all', async () => {
    const store = await EtcdStore.connect({endpoints: [server.endpoint], timeoutMs: 10_000})
    try {
      await assertConsistent(store, 'after the outages')
      const ctx = makeCtx(store)
      for (const r of runs) {
        const owned = (await ipsByHandle(ctx, r.handle).catch(() => [] as string[])).sort()
        if (r.status === 0)
          assert.deepEqual(owned, lines(r.stdout).sort(), `${r.handle}: stored addresses differ from the printed ones`)
        else
          assert.ok(
            owned.length === 0 || owned.length === COUNT,
            `${r.handle} failed but owns ${owned.length} addresses`,
          )
      }
    } finally {
      await store.close()
    }
  })
})
