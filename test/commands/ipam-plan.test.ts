// `ipamctl ipam plan` (capacity plan and --simulate) and the capacity warning of `pool create`, run as the built
// CLI. The arithmetic and its agreement with the allocator are tested in test/lib/ipam/capacity.test.ts.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import {describe, test} from 'node:test'
import {assertRejected, sandbox} from './helpers.ts'

describe('ipam plan', {concurrency: true}, () => {
  test('table: one line per answer with its reason; no datastore is opened or created for --cidr', async () => {
    const sb = sandbox()
    const r = await sb.run('ipam', 'plan', '--cidr', '10.0.0.0/16', '--nodes', '1200', '--pods-per-node', '110')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr, '')
    const out = r.stdout.split('\n')
    assert.equal(
      out[0],
      'Plan: 1,200 nodes × 110 pods in 10.0.0.0/16 (1,024 blocks of /26, 64 addresses each); borrowing allowed, block cap 20',
    )
    assert.match(r.stdout, /^blocks per node +2 +110 pods per node need 2 blocks of 64 addresses$/m)
    assert.match(r.stdout, /^claim limit +512 nodes +the pool has 1,024 blocks: .*node 513 and later claim none$/m)
    assert.match(
      r.stdout,
      /^pods +fail +75,680 pods find no room .*: 9,216 borrow from other nodes' blocks, 66,464 fail/m,
    )
    assert.match(r.stdout, /^recommended block +\/25 +\/25: the smallest block that holds/m)
    assert.match(r.stdout, /^recommended pool +\/14 +\/14: 2,048 blocks of \/25/m)
    assert.equal(fs.existsSync(sb.db), false)
  })

  test('-o json with --simulate: the plan and what the allocator did agree; no progress on a non-terminal', async () => {
    const sb = sandbox()
    const r = await sb.run(
      ...['ipam', 'plan', '--cidr', '10.0.0.0/24', '--block-size', '27', '--nodes', '10', '--pods-per-node', '20'],
      ...['--strict-affinity', '--churn', '0.2', '--simulate', '-o', 'json'],
    )
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr, '')
    const {plan, simulation} = JSON.parse(r.stdout)
    assert.equal(plan.claimLimit, 8)
    assert.equal(plan.outcome, 'fail')
    assert.equal(plan.failed, 40)
    assert.equal(typeof plan.reasons.outcome, 'string')
    for (const k of ['blocksClaimed', 'borrowed', 'failed', 'stranded']) assert.equal(simulation[k], plan[k], k)
    assert.equal(simulation.nodesRemoved, 2)
    assert.ok(simulation.datastoreCallsPerAllocation > 0)
  })

  test('--pool plans against an existing pool, its config and current use, and writes nothing', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.50.0.0/24', '--block-size', '28')
    await sb.ok('ipam', 'configure', '--strictaffinity', 'true')
    for (const n of ['n1', 'n2', 'n3']) await sb.ok('ipam', 'assign', '--host', n)
    const before = sb.dump()
    const r = await sb.run('ipam', 'plan', '--pool', 'p', '--pods-per-node', '20', '-o', 'json')
    assert.equal(r.status, 0, r.stderr)
    const {plan, current} = JSON.parse(r.stdout)
    assert.equal(plan.pool, '10.50.0.0/24')
    assert.equal(plan.blockSize, 28)
    assert.equal(plan.nodes, 3) // the known nodes
    assert.equal(plan.strictAffinity, true)
    assert.equal(plan.blocksPerNode, 2)
    assert.equal(
      current,
      '3 of 16 blocks claimed by 3 nodes (3 known): 13 more nodes can claim a block, 6 at 2 blocks each',
    )
    assert.equal(sb.dump(), before)
  })

  test('bad input: one line, exit 2, nothing changed; an unknown pool is exit 3', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.50.0.0/24')
    await assertRejected(sb, ['ipam', 'plan', '--nodes', '3'], 2, /give either --cidr or --pool/)
    await assertRejected(
      sb,
      ['ipam', 'plan', '--cidr', '10.0.0.0/16', '--churn', 'lots'],
      2,
      /churn must be a fraction/,
    )
    await assertRejected(sb, ['ipam', 'plan', '--cidr', '10.0.0.0/27'], 2, /smaller than one \/26 block/)
    await assertRejected(
      sb,
      ['ipam', 'plan', '--cidr', '10.0.0.0/16', '--max-blocks-per-host', '2', '--no-strict-affinity'],
      2,
      /requires StrictAffinity/,
    )
    await assertRejected(sb, ['ipam', 'plan', '--pool', 'nope'], 3, /IP pool nope not found/)
  })

  test('--pool on a store that does not exist: exit 3, nothing created (a read)', async () => {
    const sb = sandbox()
    const r = await sb.run('ipam', 'plan', '--pool', 'p')
    assert.equal(r.status, 3)
    assert.match(r.stderr, /does not exist; nothing was created/)
    assert.equal(fs.existsSync(sb.db), false)
  })
})

describe('pool create: capacity warning', {concurrency: true}, () => {
  test('one stderr line, exit 0, when the pool has fewer blocks than the known nodes it selects', async () => {
    const sb = sandbox()
    for (const n of ['n1', 'n2', 'n3']) await sb.ok('node', 'create', n)
    await sb.ok('node', 'create', 'r1', '--label', 'rack=a')
    const r = await sb.run('pool', 'create', 'small', '--cidr', '10.60.0.0/25')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'Successfully created IP pool small (10.60.0.0/25, block size /26)\n')
    assert.equal(
      r.stderr,
      'Warning: pool small (10.60.0.0/25) has 2 /26 blocks for 4 known nodes: 2 of them cannot claim a block of it (see ipamctl ipam plan --pool small)\n',
    )
    assert.match(await sb.ok('pool', 'list'), /small/)
  })

  test('apply warns the same way for a pool it creates, and not again when the pool is unchanged', async () => {
    const sb = sandbox()
    for (const n of ['n1', 'n2', 'n3']) await sb.ok('node', 'create', n)
    const file = `${sb.dir}/pool.yaml`
    fs.writeFileSync(
      file,
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata:\n  name: small\nspec:\n  cidr: 10.60.0.0/25\n',
    )
    const first = await sb.run('apply', '-f', file)
    assert.equal(first.status, 0, first.stderr)
    assert.equal(
      first.stderr,
      'Warning: pool small (10.60.0.0/25) has 2 /26 blocks for 3 known nodes: 1 of them cannot claim a block of it (see ipamctl ipam plan --pool small)\n',
    )
    const again = await sb.run('apply', '-f', file)
    assert.equal(again.status, 0, again.stderr)
    assert.equal(again.stderr, '')
  })

  test('no warning when every selected node can have a block, or the pool is disabled', async () => {
    const sb = sandbox()
    for (const n of ['n1', 'n2', 'n3']) await sb.ok('node', 'create', n)
    await sb.ok('node', 'create', 'r1', '--label', 'rack=a')
    for (const args of [
      ['pool', 'create', 'rack-a', '--cidr', '10.61.0.0/26', '--node-selector', 'rack == "a"'],
      ['pool', 'create', 'big', '--cidr', '10.62.0.0/24'],
      ['pool', 'create', 'off', '--cidr', '10.63.0.0/26', '--disabled'],
    ]) {
      const r = await sb.run(...args)
      assert.equal(r.status, 0, r.stderr)
      assert.equal(r.stderr, '', args.join(' '))
    }
  })
})
