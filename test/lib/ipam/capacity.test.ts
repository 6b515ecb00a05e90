// The capacity plan (capacity.ts) on worked numbers, and the same questions put to the real allocator by
// simulateCluster (capacity-sim.ts): both must give the same blocks claimed, borrowed addresses, pods without an
// address and stranded addresses wherever the arithmetic applies.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {type SimInput, simulateCluster} from '../../../src/lib/ipam/capacity-sim.ts'
import {planCapacity, recommendBlockSize, recommendPoolPrefix} from '../../../src/lib/ipam/capacity.ts'
import {planInput} from '../../../src/lib/ipam/capacity-use.ts'
import {parseCidr} from '../../../src/lib/net/cidr.ts'

const input = (cidr: string, blockSize: number, nodes: number, podsPerNode: number, more: Partial<SimInput> = {}) => ({
  pool: parseCidr(cidr),
  blockSize,
  nodes,
  podsPerNode,
  strictAffinity: false,
  maxBlocksPerHost: 0,
  churn: 0,
  ipCooldownSeconds: 0,
  ...more,
})

describe('planCapacity', () => {
  test('a /16 of /26 blocks for 1,200 nodes × 110 pods: 512 nodes claim their 2 blocks, the rest borrow, then fail', () => {
    const p = planCapacity(input('10.0.0.0/16', 26, 1200, 110))
    assert.equal(p.poolBlocks, 1024n)
    assert.equal(p.blocksPerNode, 2)
    assert.equal(p.claimLimit, 512n)
    assert.equal(p.blocksClaimed, 1024n)
    // 512 × (128 − 110) free addresses in claimed blocks; 688 nodes × 110 pods have no block.
    assert.equal(p.borrowed, 9216n)
    assert.equal(p.failed, 688n * 110n - 9216n)
    assert.equal(p.stranded, 0n)
    assert.equal(p.outcome, 'fail')
    assert.deepEqual(p.recommendation, {blockSize: 25, blocksPerNode: 1, poolPrefix: 14})
    assert.match(p.reasons.claimLimit, /node 513 and later claim none/)
    assert.match(
      p.reasons.poolPrefix,
      /^\/14: 2,048 blocks of \/25 for 1,200 nodes × 1 block: room for 848 more nodes$/,
    )
  })

  test('a cluster that fits: nothing borrowed or failed, every node strands the rest of its blocks', () => {
    const p = planCapacity(input('10.0.0.0/16', 26, 300, 30))
    assert.equal(p.outcome, 'fits')
    assert.equal(p.blocksClaimed, 300n)
    assert.equal(p.stranded, 300n * 34n)
    assert.equal(p.claimLimit, 1024n)
    assert.equal(p.recommendation.blockSize, 27)
  })

  test('strict affinity: the pods past the claim limit fail instead of borrowing', () => {
    const p = planCapacity(input('10.0.0.0/24', 27, 10, 20, {strictAffinity: true}))
    assert.equal(p.claimLimit, 8n)
    assert.equal(p.borrowed, 0n)
    assert.equal(p.failed, 40n)
    assert.equal(p.stranded, 8n * 12n)
    assert.match(p.reasons.outcome, /strict affinity forbids borrowing/)
  })

  test('the block cap: a node stops claiming at 20 blocks (or maxBlocksPerHost) and its other pods fail', () => {
    const p = planCapacity(input('10.0.0.0/16', 29, 10, 200))
    assert.equal(p.blocksPerNode, 25)
    assert.equal(p.blocksPerNodeClaimed, 20)
    assert.equal(p.failedAtCap, 10n * 40n)
    assert.equal(p.failed, 400n)
    const capped = planCapacity(input('10.0.0.0/16', 28, 3, 40, {strictAffinity: true, maxBlocksPerHost: 2}))
    assert.equal(capped.failed, 3n * 8n)
  })

  test('a cooldown with churn: churned pods hold their old addresses meanwhile, which can take another block', () => {
    const p = planCapacity(input('10.0.0.0/24', 28, 4, 14, {churn: 0.25, ipCooldownSeconds: 60}))
    assert.equal(p.peakAddressesPerNode, 18)
    assert.equal(p.blocksPerNode, 2)
    assert.equal(p.stranded, 4n * (32n - 14n))
    assert.equal(planCapacity(input('10.0.0.0/24', 28, 4, 14, {churn: 0.25})).blocksPerNode, 1)
  })

  test('recommendations: the smallest single block, the longest pool prefix; IPv6 too', () => {
    assert.equal(recommendBlockSize(4, 110), 25)
    assert.equal(recommendBlockSize(4, 1), 32)
    assert.equal(recommendBlockSize(4, 10_000), 20)
    assert.equal(recommendBlockSize(6, 110), 121)
    assert.equal(recommendPoolPrefix(25, 1000, 1), 15)
    assert.equal(recommendPoolPrefix(25, 1024, 1), 15)
    assert.equal(recommendPoolPrefix(25, 1025, 1), 14)
    assert.equal(recommendPoolPrefix(32, 2 ** 20, 8192), undefined)
    const v6 = planCapacity(input('fd00::/64', 122, 5000, 110))
    assert.equal(v6.poolBlocks, 2n ** 58n)
    assert.equal(v6.outcome, 'fits')
  })

  test('bad input is a ValidationError: pool smaller than a block, a cap without strict affinity, churn > 1', () => {
    assert.throws(() => planCapacity(input('10.0.0.0/27', 26, 1, 1)), ValidationError)
    assert.throws(() => planCapacity(input('10.0.0.0/16', 19, 1, 1)), ValidationError)
    assert.throws(() => planCapacity(input('10.0.0.0/16', 26, 0, 1)), ValidationError)
    assert.throws(() => planCapacity(input('10.0.0.0/16', 26, 1, 1, {maxBlocksPerHost: 2})), /requires StrictAffinity/)
    assert.throws(() => planInput({cidr: '10.0.0.0/16', churn: '1.5'}), /churn must be a fraction/)
    assert.throws(() => planInput({}), /give either --cidr or --pool/)
    assert.equal(planInput({cidr: '10.0.0.0/16', maxBlocksPerHost: 3}).strictAffinity, true)
  })
})

describe('simulateCluster agrees with planCapacity', () => {
  const cases: [string, SimInput][] = [
    ['fits, with pod and node churn', input('10.0.0.0/24', 28, 6, 20, {churn: 0.2})],
    ['pool too small: the last nodes borrow', input('10.0.0.0/24', 27, 10, 20)],
    ['nothing left to borrow: pods fail', input('10.0.0.0/25', 27, 6, 30, {churn: 0.1, nodeChurn: 0})],
    ['one node gets the last block, then borrows', input('10.0.0.0/24', 28, 7, 40)],
    ['strict affinity, with pod and node churn', input('10.0.0.0/24', 27, 10, 20, {strictAffinity: true, churn: 0.2})],
    // Every node replaced, among them nodes none of whose pods got an address (they have no Node record).
    ['strict affinity, every node replaced', input('10.0.0.0/26', 26, 3, 10, {strictAffinity: true, churn: 1})],
    ['block cap', input('10.0.0.0/24', 28, 3, 40, {strictAffinity: true, maxBlocksPerHost: 2})],
    [
      'cooldown during churn takes a second block',
      input('10.0.0.0/24', 28, 4, 14, {churn: 0.25, nodeChurn: 0, ipCooldownSeconds: 60}),
    ],
    ['IPv6', input('fd00::/120', 124, 20, 10)],
  ]
  for (const [name, c] of cases) {
    test(name, async () => {
      const plan = planCapacity(c)
      const sim = await simulateCluster(c)
      const pick = (x: {blocksClaimed: bigint; borrowed: bigint; failed: bigint; stranded: bigint}) => ({
        blocksClaimed: x.blocksClaimed,
        borrowed: x.borrowed,
        failed: x.failed,
        stranded: x.stranded,
      })
      assert.deepEqual(pick(sim), pick(plan))
      assert.equal(sim.conflicts, 0)
      assert.ok(sim.allocations >= c.nodes * c.podsPerNode)
    })
  }

  test('the simulation reports churn and the cost of each allocation', async () => {
    const sim = await simulateCluster(input('10.0.0.0/24', 28, 5, 20, {churn: 0.2}))
    assert.equal(sim.nodesRemoved, 1)
    assert.equal(sim.nodesAdded, 1)
    // 5 × 20 first pods, 1 × 20 for the new node, then 4 re-created pods on each of 5 nodes.
    assert.equal(sim.allocations, 100 + 20 + 20)
    assert.equal(sim.podsDeleted, 20 + 20)
    assert.equal(sim.failedAllocations, 0)
    // One transaction per allocation in a node's steady state, a read and more for each claim and its first use.
    assert.ok(sim.datastoreCallsPerAllocation > 1 && sim.datastoreCallsPerAllocation < 3)
  })

  test('batched starts (the agent path) give the same outcome', async () => {
    const c = input('10.0.0.0/24', 27, 10, 20)
    assert.deepEqual(
      (({blocksClaimed, borrowed, failed, stranded}) => ({blocksClaimed, borrowed, failed, stranded}))(
        await simulateCluster({...c, batch: 8}),
      ),
      (({blocksClaimed, borrowed, failed, stranded}) => ({blocksClaimed, borrowed, failed, stranded}))(planCapacity(c)),
    )
  })
})
