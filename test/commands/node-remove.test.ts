// `ipamctl node remove` (confirmation, summary, what it leaves behind) and the usage columns of `node list`.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture} from './helpers.ts'

const AFF = '/calico/ipam/v2/host/'
const NODE = '/calico/resources/v3/projectcalico.org/nodes/'

// n1 owns one /26 of 10.90.0.0/24 with three addresses; n2 owns another with one.
const BLOCKS = '/calico/ipam/v2/assignment/ipv4/block/'
/** The block key of the (single) block `host` owns, from its affinity key. */
const blockOf = (sb: {keys(p: string): string[]}, host: string): string =>
  BLOCKS + sb.keys(`${AFF}${host}/`)[0]!.split('/').at(-1)!

const twoNodes = () =>
  fixture('node-remove-two-nodes', [
    ['pool', 'create', 'p', '--cidr', '10.90.0.0/24'],
    ['ipam', 'assign', '--host', 'n1', '--count', '2', '--handle', 'h1'],
    ['ipam', 'assign', '--host', 'n1', '--handle', 'h1b'],
    ['ipam', 'assign', '--host', 'n2', '--handle', 'h2'],
    ['node', 'create', 'idle', '--label', 'zone=a'],
  ])

describe('node remove', {concurrency: true}, () => {
  test('node list shows blocks and addresses per node, in the table and in json', async () => {
    const sb = await twoNodes()
    const table = await sb.ok('node', 'list')
    assert.deepEqual(
      table.split('\n').map((l) => l.trimEnd().split(/\s+/)),
      [
        ['NAME', 'BLOCKS', 'ADDRESSES', 'LABELS'],
        ['idle', '0', '0', 'zone=a'],
        ['n1', '1', '3'],
        ['n2', '1', '1'],
        [''],
      ],
    )
    const json = JSON.parse(await sb.ok('node', 'list', '-o', 'json'))
    assert.deepEqual(
      json.map((n: {name: string; blocks: number; addresses: number}) => [n.name, n.blocks, n.addresses]),
      [
        ['idle', 0, 0],
        ['n1', 1, 3],
        ['n2', 1, 1],
      ],
    )
    assert.match(await sb.ok('node', 'list', '-o', 'yaml'), /name: n1\n(.*\n)*\s+blocks: 1\n\s+addresses: 3\n/)
  })

  test('without --yes and without a TTY it refuses with exit 2 and changes nothing; unknown node is exit 3', async () => {
    const sb = await twoNodes()
    await assertRejected(
      sb,
      ['node', 'remove', 'n1'],
      2,
      'Remove node n1 (1 block affinities): refusing without confirmation; pass --yes to confirm',
    )
    await assertRejected(sb, ['node', 'remove', 'n1', '--release-addresses'], 2, 'pass --yes')
    await assertRejected(sb, ['node', 'remove', 'ghost', '--yes'], 3, 'node ghost not found')
  })

  test('--yes keeps the non-empty block without an owner; --release-addresses then frees it', async () => {
    const sb = await twoNodes()
    const n1Block = blockOf(sb, 'n1')
    assert.equal(
      await sb.ok('node', 'remove', 'n1', '--yes'),
      'Removed node n1\nReleased 1 block affinities: 0 empty blocks deleted, 1 non-empty blocks kept without an owner\n',
    )
    assert.deepEqual(sb.keys(`${AFF}n1/`), [])
    assert.equal(sb.value(`${NODE}n1`), undefined)
    assert.equal(JSON.parse(sb.value(n1Block)!).affinity, null)
    await assertRejected(sb, ['node', 'remove', 'n1', '--yes'], 3, 'not found')

    const json = JSON.parse(await sb.ok('node', 'remove', 'n1', '--release-addresses', '--yes', '-o', 'json'))
    assert.deepEqual(json, {
      node: 'n1',
      affinitiesReleased: 0,
      blocksDeleted: 0,
      blocksKeptNonAffine: 0,
      addressesReleased: 3,
      endpointsDeleted: 0,
    })
    assert.equal(sb.value(n1Block), undefined)
    assert.deepEqual(sb.keys('/calico/ipam/v2/handle/'), ['/calico/ipam/v2/handle/h2'])
  })

  test('--release-addresses --yes releases everything of the node in one go', async () => {
    const sb = await twoNodes()
    const n2Affinity = sb.keys(`${AFF}n2/`)
    const n2Block = blockOf(sb, 'n2')
    assert.equal(
      await sb.ok('node', 'remove', 'n1', '--release-addresses', '--yes'),
      [
        'Removed node n1',
        'Released 1 block affinities: 1 empty blocks deleted, 0 non-empty blocks kept without an owner',
        'Released 3 addresses and deleted 0 workload endpoints',
        '',
      ].join('\n'),
    )
    assert.deepEqual(sb.keys('/calico/ipam/v2/assignment/'), [n2Block])
    assert.deepEqual(sb.keys(AFF), n2Affinity)
    assert.deepEqual(sb.keys('/calico/ipam/v2/handle/'), ['/calico/ipam/v2/handle/h2'])
  })
})
