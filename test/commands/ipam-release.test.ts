// `ipamctl ipam release`: by address (all or nothing) and by handle; cooldown.
import assert from 'node:assert/strict'
import path from 'node:path'
import {describe, test} from 'node:test'
import {assertRejected, fixture, sandbox, type Sandbox} from './helpers.ts'

// Pool 10.30.0.0/26 (one block); host h holds .1 .2 .3 under handle hx and .9 under handle solo.
const held = (): Promise<Sandbox> =>
  fixture('held', [
    ['pool', 'create', 'p', '--cidr', '10.30.0.0/26'],
    ['ipam', 'assign', '--host', 'h', '--ip', '10.30.0.1', '--ip', '10.30.0.2', '--ip', '10.30.0.3', '--handle', 'hx'],
    ['ipam', 'assign', '--host', 'h', '--ip', '10.30.0.9', '--handle', 'solo'],
  ])

const BLOCK = '/calico/ipam/v2/assignment/ipv4/block/10.30.0.0-26'
const HANDLE = '/calico/ipam/v2/handle/'
const allocated = (sb: Sandbox): number[] =>
  (JSON.parse(sb.value(BLOCK)!).allocations as (number | null)[]).flatMap((a, o) => (a === null ? [] : [o]))

describe('ipam release', {concurrency: true}, () => {
  test('--ip releases one address and decrements its handle', async () => {
    const sb = await held()
    assert.deepEqual(allocated(sb), [1, 2, 3, 9])
    assert.equal(
      await sb.ok('ipam', 'release', '--yes', '--ip', '10.30.0.2'),
      'Successfully released IP address 10.30.0.2\n',
    )
    assert.deepEqual(allocated(sb), [1, 3, 9])
    assert.deepEqual(JSON.parse(sb.value(`${HANDLE}hx`)!).block, {'10.30.0.0/26': 2})
  })

  test('several --ip (across handles) in one call; a handle left with no address is deleted', async () => {
    const sb = await held()
    assert.equal(
      await sb.ok('ipam', 'release', '--yes', '--ip', '10.30.0.1', '--ip', '10.30.0.9'),
      'Successfully released IP address 10.30.0.1\nSuccessfully released IP address 10.30.0.9\n',
    )
    assert.deepEqual(allocated(sb), [2, 3])
    assert.equal(sb.value(`${HANDLE}solo`), undefined)
    assert.deepEqual(JSON.parse(sb.value(`${HANDLE}hx`)!).block, {'10.30.0.0/26': 2})
  })

  test('--handle with one address uses the singular; other handles are untouched', async () => {
    const sb = await held()
    assert.equal(
      await sb.ok('ipam', 'release', '--yes', '--handle', 'solo'),
      'Successfully released 1 IP address of handle solo: 10.30.0.9\n',
    )
    assert.deepEqual(allocated(sb), [1, 2, 3])
    assert.equal(sb.value(`${HANDLE}solo`), undefined)
    assert.ok(sb.value(`${HANDLE}hx`))
  })

  test('the second address free: exit 3 and the first stays assigned', async () => {
    const sb = await held()
    await assertRejected(
      sb,
      ['ipam', 'release', '--yes', '--ip', '10.30.0.1', '--ip', '10.30.0.4'],
      3,
      /^Error: IP address 10\.30\.0\.4 is not assigned\n$/,
    )
    assert.deepEqual(allocated(sb), [1, 2, 3, 9])
  })

  test('with a cooldown, a released address is neither reused nor releasable until it expires', async () => {
    const sb = await held()
    assert.equal(
      await sb.ok('ipam', 'configure', '--ip-cooldown-seconds=30'),
      'Successfully set IPCooldownSeconds to: 30\n',
    )
    assert.equal(
      await sb.ok('ipam', 'release', '--yes', '--ip', '10.30.0.1'),
      'Successfully released IP address 10.30.0.1\n',
    )
    assert.match(
      await sb.ok('ipam', 'show', '--ip', '10.30.0.1'),
      /^10\.30\.0\.1 is not assigned: it was released at \d{4}-\d\d-\d\dT[\d:]+Z and is in cooldown\n$/,
    )
    await assertRejected(
      sb,
      ['ipam', 'release', '--yes', '--ip', '10.30.0.1'],
      3,
      'IP address 10.30.0.1 is not assigned (it is in cooldown)',
    )
    // Automatic assignment skips the cooling-down .1 and the held .2 .3.
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'h', '--count', '2'), '10.30.0.0\n10.30.0.4\n')
  })
})

test('explicit targets release without a question, as calicoctl does; --from-report still asks', async () => {
  const sb = sandbox()
  await sb.ok('pool', 'create', 'p', '--cidr', '10.31.0.0/28', '--block-size', '28')
  await sb.ok('ipam', 'assign', '--host', 'h1', '--count', '3', '--handle', 'hh')
  await sb.ok('ipam', 'assign', '--host', 'h1', '--count', '1', '--handle', 'h2')
  assert.equal(
    await sb.ok('ipam', 'release', '--ip', '10.31.0.0', '--ip', '10.31.0.1'),
    'Successfully released IP address 10.31.0.0\nSuccessfully released IP address 10.31.0.1\n',
  )
  assert.match(await sb.ok('ipam', 'release', '--handle', 'h2'), /^Successfully released 1 IP address of handle h2/)
  const report = path.join(sb.dir, 'r.json')
  await sb.ok('datastore', 'lock')
  await sb.ok('ipam', 'check', '-o', report)
  const before = sb.dump()
  const r = await sb.run('ipam', 'release', '--from-report', report)
  assert.equal(r.status, 2, r.stderr)
  assert.match(r.stderr, /^Error: Release .*refusing without confirmation; pass --yes to confirm\n$/)
  assert.equal(sb.dump(), before)
})
