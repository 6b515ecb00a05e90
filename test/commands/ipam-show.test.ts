// `ipamctl ipam show`: calicoctl's box tables with exact rows, exact IPv6 totals, --ip, --show-borrowed,
// --show-configuration, -o json|yaml.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {parse as parseYaml} from 'yaml'
import {addEnv, ipamPluginProc, resultIp} from '../support/agent.ts'
import {assertRejected, fixture, sandbox, type Sandbox} from './helpers.ts'

// Every pool is exactly one block, so block CIDRs are known in advance:
//   a  10.40.0.0/26 (block /26): node-1 holds 5 addresses (.0-.4, handle h-a, an app attribute)
//   b  10.41.0.0/29 (block /29): node-2 holds 3 addresses (.0-.2, no handle) → 37.5% / 62.5% round half to even
//   v6 fd00:40::/64: no allocations, 2^64 addresses
const state = (): Promise<Sandbox> =>
  fixture('state', [
    ['pool', 'create', 'a', '--cidr', '10.40.0.0/26'],
    ['pool', 'create', 'b', '--cidr', '10.41.0.0/29', '--block-size', '29'],
    ['pool', 'create', 'v6', '--cidr', 'fd00:40::/64'],
    ['ipam', 'assign', '--host', 'node-1', '--count', '5', '--handle', 'h-a', '--attr', 'app=web'],
    ['ipam', 'assign', '--host', 'node-2', '--count', '3'],
  ])

const BORDER =
  '+----------+--------------+----------------------+------------+--------------+-----------------------------+'
const HEAD =
  '| GROUPING | CIDR         | IPS TOTAL            | IPS IN USE | IPS RESERVED | IPS FREE                    |'
const POOL_A =
  '| IP Pool  | 10.40.0.0/26 |                   64 |     5 (8%) |       0 (0%) |                    59 (92%) |'
const BLOCK_A =
  '| Block    | 10.40.0.0/26 |                   64 |     5 (8%) |       0 (0%) |                    59 (92%) |'
const POOL_B =
  '| IP Pool  | 10.41.0.0/29 |                    8 |    3 (38%) |       0 (0%) |                     5 (62%) |'
const BLOCK_B =
  '| Block    | 10.41.0.0/29 |                    8 |    3 (38%) |       0 (0%) |                     5 (62%) |'
const POOL_V6 =
  '| IP Pool  | fd00:40::/64 | 18446744073709551616 |     0 (0%) |       0 (0%) | 18446744073709551616 (100%) |'
// The table is followed by one line: the blocks nobody has claimed yet, i.e. how many more nodes can claim one.
const CLAIMABLE =
  'Nodes that can still claim a block (unclaimed blocks): a 0 of 1, b 0 of 1, v6 288,230,376,151,711,744 of 288,230,376,151,711,744'
const table = (...rows: string[]) => [BORDER, HEAD, BORDER, ...rows, BORDER, CLAIMABLE, ''].join('\n')

describe('ipam show', {concurrency: true}, () => {
  test('plain: one IP Pool row per pool, exact counts (IPv6 total exact, not %.5g)', async () => {
    assert.equal(await (await state()).ok('ipam', 'show'), table(POOL_A, POOL_B, POOL_V6))
  })

  test('no utilization bar column when stdout is not a terminal (even with FORCE_COLOR)', async () => {
    const r = await (await state()).runWith(
      {env: {FORCE_COLOR: '3', NO_COLOR: undefined}},
      'ipam',
      'show',
      '--show-blocks',
    )
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, table(POOL_A, BLOCK_A, POOL_B, BLOCK_B, POOL_V6))
    assert.doesNotMatch(r.stdout, /UTILIZATION|█|░/)
  })

  test('--show-blocks adds a Block row under each pool', async () => {
    assert.equal(
      await (await state()).ok('ipam', 'show', '--show-blocks'),
      table(POOL_A, BLOCK_A, POOL_B, BLOCK_B, POOL_V6),
    )
  })

  test('-o json: parses, numbers are exact JSON integers', async () => {
    const text = await (await state()).ok('ipam', 'show', '-o', 'json')
    assert.match(text, /"capacity": 18446744073709551616,/)
    assert.match(text, /"free": 18446744073709551616\b/)
    const data = JSON.parse(text)
    assert.deepEqual(
      data.map((p: {name: string; cidr: string}) => [p.name, p.cidr]),
      [
        ['a', '10.40.0.0/26'],
        ['b', '10.41.0.0/29'],
        ['v6', 'fd00:40::/64'],
      ],
    )
    assert.deepEqual(data[0], {
      name: 'a',
      cidr: '10.40.0.0/26',
      capacity: 64,
      inUse: 5,
      reserved: 0,
      free: 59,
      blocks: [{name: '10.40.0.0/26', cidr: '10.40.0.0/26', capacity: 64, inUse: 5, reserved: 0, free: 59}],
    })
    assert.deepEqual(data[2].blocks, [])
  })

  test('-o yaml: parses, IPv6 counts exact', async () => {
    const data = parseYaml(await (await state()).ok('ipam', 'show', '-o', 'yaml'), {intAsBigInt: true})
    assert.equal(data[2].capacity, 18446744073709551616n)
    assert.equal(data[2].free, 18446744073709551616n)
    assert.equal(data[1].inUse, 3n)
  })

  test('--ip of an assigned address: handle and sorted owner attributes', async () => {
    const out = await (await state()).ok('ipam', 'show', '--ip', '10.40.0.3')
    assert.match(
      out,
      /^IP 10\.40\.0\.3 is in use\nHandle ID: h-a\nActive Owner Attributes:\n {2}app: web\n {2}node: node-1\n {2}timestamp: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC\n$/,
    )
  })

  test('--ip of an address without a handle; -o json', async () => {
    const sb = await state()
    const out = await sb.ok('ipam', 'show', '--ip', '10.41.0.2')
    assert.match(
      out,
      /^IP 10\.41\.0\.2 is in use\nHandle ID: <none>\nActive Owner Attributes:\n {2}node: node-2\n {2}timestamp: .*\n$/,
    )
    const text = await sb.ok('ipam', 'show', '--ip', '10.41.0.2', '-o', 'json')
    const json = JSON.parse(text)
    assert.equal(json.state, 'assigned')
    assert.equal(json.owner.ip, '10.41.0.2')
    assert.equal(json.owner.block, '10.41.0.0/29')
    assert.equal(json.owner.handle, undefined)
    assert.equal(json.owner.attrs.node, 'node-2')
    // The allocation's sequence number exceeds 2^53: the printed digits must equal the stored ones.
    const stored = JSON.parse(
      sb.value('/calico/ipam/v2/assignment/ipv4/block/10.41.0.0-29')!.replace(/(\d{16,})/g, '"$1"'),
    )
    assert.equal(text.match(/"sequenceNumber": (\d+)/)![1], stored.sequenceNumberForAllocation['2'])
  })

  test('--ip of a free address', async () => {
    const sb = await state()
    assert.equal(await sb.ok('ipam', 'show', '--ip', '10.40.0.60'), '10.40.0.60 is not assigned\n')
  })

  test('--ip that is not an address: exit 2', async () => {
    const sb = await state()
    await assertRejected(
      sb,
      ['ipam', 'show', '--ip', '10.0.0.1/24'],
      2,
      /^Error: invalid IP address specified: 10\.0\.0\.1\/24/,
    )
    await assertRejected(sb, ['ipam', 'show', '--ip', 'banana'], 2, /^Error: invalid IP address specified: banana/)
  })

  test('--show-configuration: the defaults, as a PROPERTY/VALUE table', async () => {
    assert.equal(
      await (await state()).ok('ipam', 'show', '--show-configuration'),
      [
        '+------------------------------+---------+',
        '| PROPERTY                     | VALUE   |',
        '+------------------------------+---------+',
        '| StrictAffinity               | false   |',
        '| AutoAllocateBlocks           | true    |',
        '| MaxBlocksPerHost             | 0       |',
        '| KubeVirtVMAddressPersistence | Enabled |',
        '| IPCooldownSeconds            | 0       |',
        '+------------------------------+---------+',
        '',
      ].join('\n'),
    )
  })

  test('the unclaimed-blocks line counts down as nodes claim blocks, and says so for a disabled pool', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.43.0.0/24', '--block-size', '26')
    await sb.ok('pool', 'create', 'off', '--cidr', '10.44.0.0/24', '--disabled')
    const line = async () => (await sb.ok('ipam', 'show')).trimEnd().split('\n').at(-1)
    assert.equal(await line(), 'Nodes that can still claim a block (unclaimed blocks): off none (disabled), p 4 of 4')
    await sb.ok('ipam', 'assign', '--host', 'n1')
    await sb.ok('ipam', 'assign', '--host', 'n2')
    assert.equal(await line(), 'Nodes that can still claim a block (unclaimed blocks): off none (disabled), p 2 of 4')
    // JSON and YAML keep their shape: the line is for the table only.
    assert.doesNotMatch(await sb.ok('ipam', 'show', '-o', 'json'), /claim/)
  })

  test("--show-borrowed: host B borrows from host A's only block (strict affinity off)", async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'one', '--cidr', '10.42.0.0/26')
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'hostA'), '10.42.0.0\n')
    // A pod's address, as the IPAM plugin records it (the CLI refuses the pod and namespace attributes).
    const add = await ipamPluginProc(
      {...addEnv('web'), CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0'},
      {
        cniVersion: '1.0.0',
        name: 'net',
        type: 'ipamctl-ipam',
        nodename: 'hostB',
        datastore_path: sb.db,
        ipam_lock_file: `${sb.dir}/ipam.lock`,
        ipam: {type: 'ipamctl-ipam'},
      },
    )
    assert.equal(add.code, 0, add.stdout + add.stderr)
    assert.equal(resultIp(add.stdout), '10.42.0.1')
    assert.equal(
      await sb.ok('ipam', 'show', '--show-borrowed'),
      [
        '+-----------+----------------+--------------+-------------+------+---------------+',
        '| IP        | BORROWING-NODE | BLOCK        | BLOCK OWNER | TYPE | ALLOCATED-TO  |',
        '+-----------+----------------+--------------+-------------+------+---------------+',
        '| 10.42.0.1 | hostB          | 10.42.0.0/26 | hostA       | pod  | default/web-0 |',
        '+-----------+----------------+--------------+-------------+------+---------------+',
        '',
      ].join('\n'),
    )
    assert.deepEqual(JSON.parse(await sb.ok('ipam', 'show', '--show-borrowed', '-o', 'json')), {
      borrowed: [
        {
          ip: '10.42.0.1',
          borrowingNode: 'hostB',
          block: '10.42.0.0/26',
          blockOwner: 'hostA',
          type: 'pod',
          allocatedTo: 'default/web-0',
        },
      ],
      withoutNode: 0,
    })
  })
})
