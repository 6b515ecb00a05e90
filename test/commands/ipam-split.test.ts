// `ipamctl ipam split` on the real binary: the lock requirement, the exact output, confirmation, and that
// every refusal leaves the datastore unchanged.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture, type Sandbox} from './helpers.ts'

const POOLS = '/calico/resources/v3/projectcalico.org/ippools/'

const unlocked = (): Promise<Sandbox> =>
  fixture('split-unlocked', [
    ['pool', 'create', 'p', '--cidr', '10.50.0.0/24', '--nat-outgoing'],
    ['ipam', 'assign', '--host', 'h1', '--count', '2'],
  ])

const locked = (): Promise<Sandbox> =>
  fixture('split-locked', [
    ['pool', 'create', 'p', '--cidr', '10.50.0.0/24', '--nat-outgoing'],
    ['ipam', 'assign', '--host', 'h1', '--count', '2'],
    ['datastore', 'lock'],
  ])

describe('ipam split', {concurrency: true}, () => {
  test('refuses while the datastore is not locked', async () => {
    await assertRejected(
      await unlocked(),
      ['ipam', 'split', '2', '--name', 'p', '--yes'],
      4,
      'datastore is not locked. Run the `ipamctl datastore lock` command in order split the IP pools',
    )
  })

  test('splits by name with --yes: exact output, children in address order, blocks untouched', async () => {
    const sb = await locked()
    const blocks = sb.keys('/calico/ipam/').map((k) => [k, sb.value(k)])
    assert.equal(
      await sb.ok('ipam', 'split', '4', '--name', 'p', '--yes'),
      [
        'IP Pool p was successfully split into 4 smaller pools.',
        'Created split-p-0 with CIDR 10.50.0.0/26.',
        'Created split-p-1 with CIDR 10.50.0.64/26.',
        'Created split-p-2 with CIDR 10.50.0.128/26.',
        'Created split-p-3 with CIDR 10.50.0.192/26.',
        'Please refer to the documentation for final steps.',
        '',
      ].join('\n'),
    )
    assert.deepEqual(
      sb.keys(POOLS),
      ['split-p-0', 'split-p-1', 'split-p-2', 'split-p-3'].map((n) => POOLS + n),
    )
    const child = JSON.parse(sb.value(`${POOLS}split-p-0`)!)
    assert.equal(child.spec.natOutgoing, true)
    assert.equal(child.spec.disabled, undefined)
    assert.deepEqual(
      sb.keys('/calico/ipam/').map((k) => [k, sb.value(k)]),
      blocks,
    )
  })

  test('splits by CIDR', async () => {
    const sb = await locked()
    assert.match(
      await sb.ok('ipam', 'split', '2', '--cidr', '10.50.0.0/24', '-y'),
      /^IP Pool p was successfully split into 2 smaller pools\.\nCreated split-p-0 with CIDR 10\.50\.0\.0\/25\.\n/,
    )
  })

  test('without a terminal and without --yes it refuses and changes nothing', async () => {
    await assertRejected(
      await locked(),
      ['ipam', 'split', '2', '--name', 'p'],
      2,
      /refusing without confirmation; pass --yes/,
    )
  })

  test('rule violations are clean errors that change nothing', async () => {
    const sb = await locked()
    await assertRejected(
      sb,
      ['ipam', 'split', '2', '--yes'],
      2,
      'no name or CIDR provided. Provide a name or CIDR to denote the IP pool to split',
    )
    await assertRejected(
      sb,
      ['ipam', 'split', '3', '--name', 'p', '--yes'],
      2,
      'number to split CIDR into is not a valid power of 2: 3',
    )
    await assertRejected(
      sb,
      ['ipam', 'split', '8', '--name', 'p', '--yes'],
      2,
      /smaller than the pool's block size \/26/,
    )
    await assertRejected(
      sb,
      ['ipam', 'split', '2', '--name', 'nope', '--yes'],
      3,
      'unable to find IP pool nope covering the specified CIDR',
    )
  })
})
