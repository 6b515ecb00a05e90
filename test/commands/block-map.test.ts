// `ipamctl block inspect --map`: without a terminal the grid is letters (A allocated, . free, R reserved,
// C cooling down), 16 cells per row labelled with the row's first address, and a legend.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ANSI, fixture, type Sandbox} from './helpers.ts'

// /29 pool = one /29 block: .6-.7 reserved, h1 takes .0-.2 (.6/.7 skipped), then .1 is released into
// a 10-minute cooldown.
const small = (): Promise<Sandbox> =>
  fixture('map-small', [
    ['pool', 'create', 'm', '--cidr', '10.80.0.0/29', '--block-size', '29'],
    ['ipam', 'configure', '--ip-cooldown-seconds', '600'],
    ['reservation', 'create', 'r', '--cidr', '10.80.0.6/31'],
    ['ipam', 'assign', '--host', 'h1', '--count', '3'],
    ['ipam', 'release', '--yes', '--ip', '10.80.0.1'],
    ['pool', 'create', 'big', '--cidr', '10.81.0.0/26'],
    ['ipam', 'assign', '--host', 'h2', '--count', '17'],
  ])

const LEGEND = 'Legend: A allocated  . free  R reserved  C cooling down'

describe('block inspect --map', {concurrency: true}, () => {
  test('a /29 block: exact letter grid and legend', async () => {
    const sb = await small()
    assert.equal(
      await sb.ok('block', 'inspect', '10.80.0.0/29', '--map'),
      ['Block 10.80.0.0/29, affinity host:h1', '10.80.0.0  A C A . . . R R', LEGEND, ''].join('\n'),
    )
  })

  test('a /26 block is four rows of 16, each labelled with its first address', async () => {
    const out = await (await small()).ok('block', 'inspect', '10.81.0.5', '--map')
    const free = Array(16).fill('.').join(' ')
    assert.equal(
      out,
      [
        'Block 10.81.0.0/26, affinity host:h2',
        `10.81.0.0   ${Array(16).fill('A').join(' ')}`,
        `10.81.0.16  A ${Array(15).fill('.').join(' ')}`,
        `10.81.0.32  ${free}`,
        `10.81.0.48  ${free}`,
        LEGEND,
        '',
      ].join('\n'),
    )
  })

  test('no colour without a terminal, even with FORCE_COLOR', async () => {
    const r = await (await small()).runWith(
      {env: {FORCE_COLOR: '3', NO_COLOR: undefined}},
      'block',
      'inspect',
      '10.80.0.0/29',
      '--map',
    )
    assert.equal(r.status, 0, r.stderr)
    assert.doesNotMatch(r.stdout, ANSI)
    assert.ok(r.stdout.includes('10.80.0.0  A C A . . . R R\n'))
  })

  test('without --map the stored JSON is printed unchanged', async () => {
    const sb = await small()
    assert.equal(
      await sb.ok('block', 'inspect', '10.80.0.0/29'),
      `${sb.value('/calico/ipam/v2/assignment/ipv4/block/10.80.0.0-29')}\n`,
    )
  })
})
