// `ipam plan`'s human layout: a heading, then one line per answer: name, value, and the reason in one line.
import type {CapacityPlan} from '../lib/ipam/capacity.js'
import type {SimResult} from '../lib/ipam/capacity-sim.js'

const fmt = (n: bigint | number, digits = 0): string =>
  typeof n === 'bigint'
    ? n.toLocaleString('en-US')
    : n.toLocaleString('en-US', {minimumFractionDigits: digits, maximumFractionDigits: digits})

function rows(lines: readonly (readonly [string, string, string?])[]): string[] {
  const w0 = Math.max(...lines.map((l) => l[0].length))
  const w1 = Math.max(...lines.map((l) => l[1].length))
  return lines.map(([a, b, c]) => (c ? `${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}` : `${a.padEnd(w0)}  ${b}`).trimEnd())
}

export function planView(plan: CapacityPlan, current?: string, sim?: SimResult): string {
  const r = plan.reasons
  const rec = plan.recommendation
  const out = [
    `Plan: ${fmt(plan.nodes)} nodes × ${fmt(plan.podsPerNode)} pods in ${plan.pool} (${fmt(plan.poolBlocks)} blocks of /${plan.blockSize}, ${fmt(plan.blockAddresses)} addresses each); ${plan.strictAffinity ? 'strict affinity' : 'borrowing allowed'}, block cap ${plan.blockCap}`,
    ...rows([
      ['blocks per node', fmt(plan.blocksPerNode), r.blocksPerNode],
      ['claim limit', `${fmt(plan.claimLimit)} nodes`, r.claimLimit],
      ['stranded addresses', fmt(plan.stranded), r.stranded],
      ['pods', plan.outcome === 'fits' ? 'fit' : plan.outcome === 'borrow' ? 'borrow' : 'fail', r.outcome],
      ['recommended block', `/${rec.blockSize}`, r.blockSize],
      ['recommended pool', rec.poolPrefix === undefined ? 'none' : `/${rec.poolPrefix}`, r.poolPrefix],
      ...(current ? ([['current use', '', current]] as const) : []),
    ]),
  ]
  if (sim) {
    out.push(
      '',
      `Simulation (the allocator on an in-memory store): ${fmt(sim.allocations)} allocations, ${fmt(sim.podsDeleted)} pods deleted, ${fmt(sim.nodesRemoved)} nodes removed and ${fmt(sim.nodesAdded)} added in ${fmt(sim.seconds, 1)} s; ${fmt(sim.allocationsPerSecond)} allocations/s inside the allocator`,
      ...rows([
        ['', 'simulated', 'plan'],
        ['blocks claimed', fmt(sim.blocksClaimed), fmt(plan.blocksClaimed)],
        ['borrowed addresses', fmt(sim.borrowed), fmt(plan.borrowed)],
        ['pods without an address', fmt(sim.failed), fmt(plan.failed)],
        ['stranded addresses', fmt(sim.stranded), fmt(plan.stranded)],
        ['failed allocations', fmt(sim.failedAllocations)],
        ['borrowing allocations', fmt(sim.borrowedAllocations)],
        ['datastore calls per allocation', fmt(sim.datastoreCallsPerAllocation, 2)],
      ]),
    )
  }
  return `${out.join('\n')}\n`
}
