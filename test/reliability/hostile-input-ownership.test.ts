// Input that would make a command write something it does not own, or more than was meant: an attribute that
// rewrites who owns an address, a CIDR whose host bits widen a reservation or pick another pool, a report
// taken without the lock. Each is refused with one clean `Error:` line and leaves the datastore byte-identical.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture, type Sandbox} from '../commands/helpers.ts'

const BLOCK = '/calico/ipam/v2/assignment/ipv4/block/10.70.0.0-26'

// Pool 10.70.0.0/24 with n1 owning 10.70.0.0/26 (one address).
const store = (): Promise<Sandbox> =>
  fixture('ownership', [
    ['pool', 'create', 'p', '--cidr', '10.70.0.0/24'],
    ['ipam', 'assign', '--host', 'n1', '--ip', '10.70.0.5', '--handle', 'h1'],
  ])

describe('hostile input: ownership', {concurrency: true}, () => {
  for (const key of ['node', 'timestamp', 'pod', 'namespace']) {
    test(`ipam assign --attr ${key}=… is refused (the key is reserved), nothing written`, async () => {
      const sb = await store()
      await assertRejected(
        sb,
        ['ipam', 'assign', '--host', 'n1', '--handle', 'x', '--attr', `${key}=evil`],
        2,
        `attribute key "${key}" is reserved`,
      )
      await assertRejected(
        sb,
        ['ipam', 'assign', '--host', 'n1', '--ip', '10.70.0.6', '--attr', 'note=ok', '--attr', `${key}=evil`],
        2,
        `attribute key "${key}" is reserved`,
      )
    })
  }

  test('ipam assign --attr with another key is kept, and node stays the host', async () => {
    const sb = await store()
    await sb.ok(
      'ipam',
      'assign',
      '--host',
      'n1',
      '--ip',
      '10.70.0.6',
      '--handle',
      'h2',
      '--attr',
      'note=gateway',
      '--attr',
      'type=ipipTunnelAddress',
    )
    const block = JSON.parse(sb.value(BLOCK)!)
    const attr = block.attributes[block.allocations[6]]
    assert.equal(attr.secondary.node, 'n1')
    assert.equal(attr.secondary.note, 'gateway')
    assert.equal(attr.secondary.type, 'ipipTunnelAddress')
    const n1 = JSON.parse(await sb.ok('node', 'list', '-o', 'json')).find((n: {name: string}) => n.name === 'n1')
    assert.equal(n1.addresses, 2)
  })

  test('reservation create with host bits set is refused with pool create\'s "did you mean"', async () => {
    const sb = await store()
    await assertRejected(
      sb,
      ['reservation', 'create', 'bad', '--cidr', '10.70.0.1/24'],
      2,
      'did you mean 10.70.0.0/24?',
    )
    await assertRejected(
      sb,
      ['reservation', 'create', 'bad', '--cidr', '10.70.0.9', '--cidr', 'fd00::1/64'],
      2,
      'did you mean fd00::/64?',
    )
    // The same message pool create gives, from the same parser.
    const pool = await assertRejected(sb, ['pool', 'create', 'q', '--cidr', '10.71.0.1/24'], 2)
    assert.match(pool.stderr, /not strictly masked \(host bits set\); did you mean 10\.71\.0\.0\/24\?/)
  })

  test('pool delete and pool get by a CIDR with host bits set are refused, not matched to the masked pool', async () => {
    const sb = await store()
    await assertRejected(sb, ['pool', 'delete', '10.70.0.1/24', '--yes'], 2, 'did you mean 10.70.0.0/24?')
    await assertRejected(sb, ['pool', 'get', '10.70.0.1/24'], 2, 'did you mean 10.70.0.0/24?')
  })

  test('ipam split --cidr with host bits set is refused, even on a locked datastore', async () => {
    const sb = await store()
    await sb.ok('datastore', 'lock')
    await assertRejected(sb, ['ipam', 'split', '2', '--cidr', '10.70.0.1/24', '--yes'], 2, 'did you mean 10.70.0.0/24?')
    await assertRejected(
      sb,
      ['ipam', 'split', '2', '--cidr', '10.70.0.1/24', '--dry-run'],
      2,
      'did you mean 10.70.0.0/24?',
    )
  })

  test('release --from-report of a report taken without the lock says to lock, check, then release', async () => {
    const sb = await store()
    const report = `${sb.dir}/unlocked.json`
    await sb.ok('ipam', 'check', '-o', report)
    const steps =
      'lock the datastore (`ipamctl datastore lock`), run `ipamctl ipam check -o report.json`, then `ipamctl ipam release --from-report report.json`'
    const r = await assertRejected(sb, ['ipam', 'release', '--from-report', report, '--yes'], 2, steps)
    assert.match(
      r.stderr,
      /^Error: the provided report \(.*unlocked\.json\) was taken while the datastore was not locked/,
    )
    assert.doesNotMatch(r.stderr, /mismatched cluster GUID/)
    // Locking afterwards does not make the old report usable; the message is the same.
    await sb.ok('datastore', 'lock')
    await assertRejected(sb, ['ipam', 'release', '--from-report', report, '--yes', '--force'], 2, steps)
    // A report taken under the lock is accepted.
    const good = `${sb.dir}/locked.json`
    await sb.ok('ipam', 'check', '-o', good)
    assert.match(await sb.ok('ipam', 'release', '--from-report', good, '--yes'), /You may now unlock the data store\./)
  })

  test('release --from-report of a report from another cluster keeps the GUID message', async () => {
    const sb = await store()
    await sb.ok('datastore', 'lock')
    const report = `${sb.dir}/r.json`
    await sb.ok('ipam', 'check', '-o', report)
    const other = await store()
    await other.ok('datastore', 'lock')
    await assertRejected(
      other,
      ['ipam', 'release', '--from-report', report, '--yes'],
      2,
      'mismatched cluster GUID. Refusing to release',
    )
  })
})
