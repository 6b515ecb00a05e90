// `ipamctl ipam assign`: one address per line, dual stack, handles, specific addresses, partial results.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {fixture, lines, sandbox, type Sandbox} from './helpers.ts'

// p4 = 10.20.0.0/26 (exactly one /26 block: its CIDR is predictable), p6 = fd00:20::/120 (four /122 blocks).
const pools = (): Promise<Sandbox> =>
  fixture('pools', [
    ['pool', 'create', 'p4', '--cidr', '10.20.0.0/26'],
    ['pool', 'create', 'p6', '--cidr', 'fd00:20::/120'],
  ])

const BLOCK4 = '/calico/ipam/v2/assignment/ipv4/block/10.20.0.0-26'
const isV6In120 = (a: string) => /^fd00:20::[0-9a-f]{1,2}$/.test(a)

describe('ipam assign', {concurrency: true}, () => {
  test('--count prints one address per line, in block order, recorded in the block and the handle', async () => {
    const sb = await pools()
    assert.equal(
      await sb.ok('ipam', 'assign', '--host', 'node-1', '--count', '3', '--handle', 'pod-a'),
      '10.20.0.0\n10.20.0.1\n10.20.0.2\n',
    )
    const block = JSON.parse(sb.value(BLOCK4)!)
    assert.equal(block.affinity, 'host:node-1')
    assert.deepEqual(block.allocations.slice(0, 4), [0, 0, 0, null])
    assert.equal(block.attributes[0].handle_id, 'pod-a')
    assert.equal(block.attributes[0].secondary.node, 'node-1')
    assert.deepEqual(JSON.parse(sb.value('/calico/ipam/v2/handle/pod-a')!), {
      block: {'10.20.0.0/26': 3},
      deleted: false,
    })
    assert.ok(sb.value('/calico/resources/v3/projectcalico.org/nodes/node-1'), 'node record created on first use')
  })

  test('--count and --count6: dual stack prints the IPv4 line, then the IPv6 line', async () => {
    const sb = await pools()
    const out = lines(await sb.ok('ipam', 'assign', '--host', 'node-1', '--count', '1', '--count6', '1'))
    assert.equal(out.length, 2, out.join('\n'))
    assert.equal(out[0], '10.20.0.0')
    assert.ok(isV6In120(out[1]!), out[1])
  })

  test('--count6 only, with --pool naming both families', async () => {
    const sb = await pools()
    const out = lines(
      await sb.ok(
        'ipam',
        'assign',
        '--host',
        'node-1',
        '--count6',
        '2',
        '--count',
        '0',
        '--pool',
        'p4',
        '--pool',
        'fd00:20::/120',
      ),
    )
    assert.equal(out.length, 2)
    assert.ok(out.every(isV6In120), out.join(' '))
    assert.equal(sb.value(BLOCK4), undefined, 'no IPv4 block claimed')
  })

  test('--handle then release --handle releases them all and prints the count', async () => {
    const sb = await pools()
    const assigned = lines(
      await sb.ok(
        'ipam',
        'assign',
        '--host',
        'node-1',
        '--count',
        '2',
        '--count6',
        '1',
        '--handle',
        'pod-b',
        '--attr',
        'app=web',
      ),
    )
    assert.equal(assigned.length, 3)
    assert.equal(
      await sb.ok('ipam', 'release', '--yes', '--handle', 'pod-b'),
      `Successfully released 3 IP addresses of handle pod-b: ${assigned.join(', ')}\n`,
    )
    assert.equal(sb.value('/calico/ipam/v2/handle/pod-b'), undefined, 'handle deleted')
    const block = JSON.parse(sb.value(BLOCK4)!)
    assert.ok(
      block.allocations.every((a: number | null) => a === null),
      'every address free again',
    )
    assert.equal(block.affinity, 'host:node-1', 'the empty affine block is kept for reuse')
    assert.equal(await sb.ok('ipam', 'show', '--ip', assigned[2]!), `${assigned[2]} is not assigned\n`)
  })

  test('--ip assigns exactly those addresses; show --ip reports the owner', async () => {
    const sb = await pools()
    assert.equal(
      await sb.ok(
        'ipam',
        'assign',
        '--host',
        'gw',
        '--ip',
        '10.20.0.50',
        '--ip',
        'fd00:20::00aa',
        '--handle',
        'gateway',
      ),
      '10.20.0.50\nfd00:20::aa\n',
    )
    const block = JSON.parse(sb.value(BLOCK4)!)
    assert.equal(block.allocations[50], 0)
    assert.equal(block.allocations.filter((a: number | null) => a !== null).length, 1)
    assert.equal(block.affinity, 'host:gw', 'an unclaimed block is claimed for the host')
    assert.match(
      await sb.ok('ipam', 'show', '--ip', 'fd00:20::aa'),
      /^IP fd00:20::aa is in use\nHandle ID: gateway\nActive Owner Attributes:\n {2}node: gw\n/,
    )
  })

  test('partial result: a /30 pool with /30 blocks yields 4 of 6; the 4 are printed and kept, exit 6', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'tiny', '--cidr', '10.21.0.0/30', '--block-size', '30')
    const r = await sb.run('ipam', 'assign', '--host', 'node-1', '--count', '6', '--handle', 'big')
    assert.equal(r.status, 6, r.stderr)
    assert.equal(r.stdout, '10.21.0.0\n10.21.0.1\n10.21.0.2\n10.21.0.3\n')
    assert.match(r.stderr, /^Error: Assigned 4 out of 6 requested IPv4 addresses\b.*\n$/)
    assert.equal(r.stderr.split('\n').length, 2)
    assert.doesNotMatch(r.stderr, /^\s+at /m)
    const block = JSON.parse(sb.value('/calico/ipam/v2/assignment/ipv4/block/10.21.0.0-30')!)
    assert.deepEqual(block.allocations, [0, 0, 0, 0])
    assert.deepEqual(JSON.parse(sb.value('/calico/ipam/v2/handle/big')!).block, {'10.21.0.0/30': 4})

    // Nothing left at all: exit 6 with nothing on stdout; -o json still parses and says so.
    const none = await sb.run('ipam', 'assign', '--host', 'node-1', '--count', '1', '-o', 'json')
    assert.equal(none.status, 6)
    assert.deepEqual(JSON.parse(none.stdout), {handle: null, ips: [], complete: false})
    assert.match(none.stderr, /^Error: Assigned 0 out of 1 requested IPv4 addresses/)
  })

  test('-o json lists the addresses with their block', async () => {
    const sb = await pools()
    const r = JSON.parse(
      await sb.ok('ipam', 'assign', '--host', 'node-1', '--count', '2', '--handle', 'h-json', '-o', 'json'),
    )
    assert.deepEqual(r, {
      handle: 'h-json',
      ips: [
        {address: '10.20.0.0', family: 4, cidr: '10.20.0.0/26', block: '10.20.0.0/26'},
        {address: '10.20.0.1', family: 4, cidr: '10.20.0.1/26', block: '10.20.0.0/26'},
      ],
      complete: true,
    })
    const yaml = await sb.ok('ipam', 'assign', '--host', 'node-1', '--ip', '10.20.0.9', '-o', 'yaml')
    assert.match(yaml, /address: 10\.20\.0\.9\n/)
  })
})
