// etcd dies while several `ipam assign` commands are running: each one either succeeds or fails cleanly
// (exit 5, one line) within its timeout, and after a restart the data is consistent: every block parses,
// handle counts match allocations exactly, no address is allocated twice, and allocation carries on.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {checkConsistency, Cli, etcdDump, ipKey, sleep, type TimedResult} from './etcd-cli.ts'
import {assertCleanError, lines} from './helpers.ts'

let server: EtcdServer
let ep: string
const cli = new Cli()

const TIMEOUT_S = 3
/** Process start under load (up to 8 CLIs on a small machine) plus exit: generous, but far below a hang. */
const SLACK_MS = 5000
const EARLY = 6 // started while etcd is up
const LATE = 2 // started after it was killed

interface Outcome {
  handle: string
  r: TimedResult
}

const outcomes: Outcome[] = []

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  ep = server.endpoint
  await cli.ok(ep, ['pool', 'create', 'outage', '--cidr', '10.90.0.0/20'])
})

after(async () => {
  await server?.stop()
})

const assign = (host: string, handle: string) =>
  cli.etcd(ep, ['ipam', 'assign', '--host', host, '--count', '5', '--handle', handle, '--timeout', String(TIMEOUT_S)])

describe('etcd killed while commands run', {skip: etcdSkipReason}, () => {
  test('every command succeeds or fails with exit 5 and one clean line, within timeout + slack', async (t) => {
    const early = Array.from({length: EARLY}, (_, i) => ({handle: `early-${i}`, p: assign(`h${i}`, `early-${i}`)}))
    // Kill as soon as the first allocation is committed: the others are then starting up or mid-flight.
    const until = Date.now() + 8000
    while (Date.now() < until && server.ctl('get', '--prefix', '/calico/ipam/v2/handle/', '--keys-only').trim() === '')
      await sleep(25)
    await server.kill()
    const late = Array.from({length: LATE}, (_, i) => ({handle: `late-${i}`, p: assign(`late${i}`, `late-${i}`)}))
    for (const {handle, p} of [...early, ...late]) outcomes.push({handle, r: await p})
    for (const o of outcomes) t.diagnostic(`${o.handle} ${o.r.status} ${o.r.ms} ms ${o.r.stderr.trim()}`)

    for (const {handle, r} of outcomes) {
      const ctx = `${handle}: status ${r.status} after ${r.ms} ms\n${r.stderr}${r.stdout}`
      assert.ok(r.status === 0 || r.status === 5, ctx)
      if (r.status === 0) {
        const ips = lines(r.stdout)
        assert.equal(ips.length, 5, ctx)
        assert.equal(r.stderr, '', ctx)
      } else {
        assertCleanError(r, 5, ep)
        assert.match(r.stderr, /^Error: etcd at http:\/\/127\.0\.0\.1:\d+ is unavailable/, ctx)
      }
      assert.ok(r.ms < TIMEOUT_S * 1000 + SLACK_MS, `hung: ${ctx}`)
    }
    for (const {handle, r} of outcomes.filter((o) => o.handle.startsWith('late')))
      assert.equal(r.status, 5, `${handle} ran with etcd down`)
    const ok = outcomes.filter((o) => o.r.status === 0).length
    t.diagnostic(
      `${ok} succeeded, ${outcomes.length - ok} failed; slowest ${Math.max(...outcomes.map((o) => o.r.ms))} ms`,
    )
  })

  test('after a restart the data is consistent and every printed address belongs to its handle', async () => {
    await server.start()
    const {kvs} = etcdDump(server)
    assert.ok(
      [...kvs.keys()].some((k) => k.startsWith('/calico/ipam/v2/handle/early-')),
      'nothing was committed before the kill: the scenario did not happen',
    )
    const c = checkConsistency(kvs)
    assert.deepEqual(c.problems, [])
    const printed: string[] = []
    for (const {handle, r} of outcomes) {
      if (r.status !== 0) continue
      const ips = lines(r.stdout)
      printed.push(...ips)
      const owned = [...c.owners.entries()]
        .filter(([, h]) => h === handle)
        .map(([k]) => k)
        .sort()
      assert.deepEqual(owned, ips.map(ipKey).sort(), `${handle}: stored addresses differ from the printed ones`)
      assert.deepEqual(JSON.parse(kvs.get(`/calico/ipam/v2/handle/${handle}`)!).block, {
        [`${ips[0]!.replace(/\.\d+$/, '')}.${Number(ips[0]!.split('.')[3]) & ~63}/26`]: 5,
      })
    }
    assert.equal(new Set(printed).size, printed.length, `an address was handed out twice: ${printed.join(' ')}`)
    // Whatever a failed command may have committed before the connection dropped is fully accounted for.
    for (const {handle, r} of outcomes) {
      if (r.status === 0) continue
      const owned = [...c.owners.values()].filter((h) => h === handle).length
      assert.ok(owned === 0 || owned === 5, `${handle} failed but owns ${owned} addresses`)
    }
  })

  test('ipam assign works again and gives new distinct addresses', async () => {
    const before = checkConsistency(etcdDump(server).kvs).owners
    const fresh = lines(await cli.ok(ep, ['ipam', 'assign', '--host', 'h0', '--count', '5', '--handle', 'after']))
    assert.equal(fresh.length, 5)
    assert.equal(new Set(fresh).size, 5)
    for (const ip of fresh) assert.ok(!before.has(ipKey(ip)), `${ip} was already allocated`)
    const c = checkConsistency(etcdDump(server).kvs)
    assert.deepEqual(c.problems, [])
    for (const ip of fresh) assert.equal(c.owners.get(ipKey(ip)), 'after')
  })
})

describe('the consistency checker', () => {
  const nulls = (n: number) => Array(n).fill('null').join(',')
  const range = (a: number, b: number) => Array.from({length: b - a}, (_, i) => a + i).join(',')
  const good = (): Map<string, string> =>
    new Map([
      [
        '/calico/ipam/v2/assignment/ipv4/block/10.9.0.0-30',
        `{"cidr":"10.9.0.0/30","affinity":"host:n","allocations":[0,0,null,null],"unallocated":[2,3],"attributes":[{"handle_id":"h"}],"sequenceNumber":1,"sequenceNumberForAllocation":{},"deleted":false}`,
      ],
      [
        '/calico/ipam/v2/assignment/ipv6/block/fd00::-126',
        `{"cidr":"fd00::/126","affinity":null,"allocations":[${nulls(3)},0],"unallocated":[${range(0, 3)}],"attributes":[{"handle_id":"h"}],"sequenceNumber":1,"sequenceNumberForAllocation":{},"deleted":false}`,
      ],
      ['/calico/ipam/v2/handle/h', '{"block":{"10.9.0.0/30":2,"fd00::/126":1},"deleted":false}'],
      ['/calico/ipam/v2/host/n/ipv4/block/10.9.0.0-30', '{"state":"confirmed","deleted":false}'],
    ])
  const broken = (mutate: (m: Map<string, string>) => void): string[] => {
    const m = good()
    mutate(m)
    return checkConsistency(m).problems
  }
  const B4 = '/calico/ipam/v2/assignment/ipv4/block/10.9.0.0-30'

  test('accepts consistent data and reports owners', () => {
    const c = checkConsistency(good())
    assert.deepEqual(c.problems, [])
    assert.equal(c.owners.get(ipKey('10.9.0.1')), 'h')
    assert.equal(c.owners.get(ipKey('fd00::3')), 'h')
    assert.equal(c.owners.size, 3)
  })

  test('catches each kind of damage', () => {
    assert.match(
      broken((m) =>
        m.set('/calico/ipam/v2/handle/h', '{"block":{"10.9.0.0/30":1,"fd00::/126":1},"deleted":false}'),
      ).join(),
      /handle h: record says/,
    )
    assert.match(broken((m) => m.delete('/calico/ipam/v2/handle/h')).join(), /no handle record/)
    assert.match(broken((m) => m.set(B4, m.get(B4)!.replace('[2,3]', '[2,2]'))).join(), /twice in unallocated/)
    assert.match(
      broken((m) => m.set(B4, m.get(B4)!.replace('[2,3]', '[1,2,3]'))).join(),
      /allocated and also in unallocated/,
    )
    assert.match(broken((m) => m.set(B4, m.get(B4)!.replace('[0,0,null', '[0,1,null'))).join(), /missing attribute/)
    assert.match(
      broken((m) => m.set(B4, m.get(B4)!.replace('{"handle_id":"h"}', '{"handle_id":"h"},{"handle_id":"x"}'))).join(),
      /attribute 1 is not referenced/,
    )
    assert.match(broken((m) => m.delete('/calico/ipam/v2/host/n/ipv4/block/10.9.0.0-30')).join(), /is missing/)
    assert.match(
      broken((m) =>
        m.set('/calico/ipam/v2/host/z/ipv4/block/10.9.0.4-30', '{"state":"confirmed","deleted":false}'),
      ).join(),
      /affinity without a matching block/,
    )
    assert.match(broken((m) => m.set(B4, '{"cidr":')).join(), /not JSON/)
    assert.match(
      broken((m) => m.set(B4, m.get(B4)!.replace('"cidr":"10.9.0.0/30"', '"cidr":"10.9.0.4/30"'))).join(),
      /does not match the key/,
    )
  })
})
