import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {planView} from '../../cli/plan-view.js'
import {render} from '../../cli/render.js'
import {planCapacity} from '../../lib/ipam/capacity.js'
import {simulateCluster} from '../../lib/ipam/capacity-sim.js'
import {
  currentUseLine,
  DEFAULT_PODS_PER_NODE,
  parseFraction,
  planInput,
  type PoolUse,
  poolUse,
} from '../../lib/ipam/capacity-use.js'

export default class IpamPlan extends BaseCommand {
  // Only --pool opens the datastore, and only to read it.
  static override storeMode = 'read' as const
  static override summary = 'Size pools and blocks: how a pool serves a cluster under block affinity, and what to use.'
  static override description =
    `For --cidr (or an existing --pool and its IPAM config), the nodes and pods per node: blocks per node, the node count from which new nodes can no longer claim a block, addresses stranded in partly used blocks, whether pods borrow or fail, and the recommended block size and pool prefix, each with its reason. Nodes are taken to join one after another. --simulate also runs the real allocator on an in-memory store with that cluster (and --churn: that fraction of each node's pods deleted and re-created, then of the nodes removed and replaced) and shows what happened next to the plan; progress goes to stderr on a terminal. The datastore is never written.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --cidr 10.0.0.0/16 --nodes 1200 --pods-per-node 110',
    '<%= config.bin %> <%= command.id %> --cidr 10.0.0.0/16 --block-size 26 --nodes 300 --pods-per-node 30 --strict-affinity --simulate',
    '<%= config.bin %> <%= command.id %> --pool default-ipv4-ippool --nodes 2000 -o json',
  ]
  static override flags = {
    cidr: Flags.string({summary: 'Pool CIDR to plan for, e.g. 10.0.0.0/16.', exclusive: ['pool']}),
    pool: Flags.string({summary: 'Plan for this existing pool, its IPAM config and its current use.'}),
    'block-size': Flags.integer({summary: "Block prefix length (default: the pool's, or 26 / 122)."}),
    nodes: Flags.integer({summary: 'Nodes in the cluster (default with --pool: the known nodes).'}),
    'pods-per-node': Flags.integer({summary: `Pods (addresses) per node (default ${DEFAULT_PODS_PER_NODE}).`}),
    'strict-affinity': Flags.boolean({
      summary: 'Plan with strict affinity (no borrowing); --no-strict-affinity without (default: the config).',
      allowNo: true,
    }),
    'max-blocks-per-host': Flags.integer({
      summary: 'Block cap per node (implies strict affinity; default: the config, 0 = 20).',
    }),
    churn: Flags.string({summary: 'Fraction (0-1) of pods re-created and of nodes replaced, e.g. 0.1.'}),
    'node-churn': Flags.string({
      summary: 'With --simulate: fraction (0-1) of nodes replaced, if not --churn (each removal reads every block).',
    }),
    simulate: Flags.boolean({summary: 'Also run the real allocator on an in-memory store with this cluster.'}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamPlan)
    let use: PoolUse | undefined
    if (flags.pool !== undefined) use = await poolUse(await this.ctx(flags), flags.pool)
    const input = planInput({
      cidr: flags.cidr,
      pool: use,
      blockSize: flags['block-size'],
      nodes: flags.nodes,
      podsPerNode: flags['pods-per-node'],
      strictAffinity: flags['strict-affinity'],
      maxBlocksPerHost: flags['max-blocks-per-host'],
      churn: flags.churn,
    })
    const plan = planCapacity(input)
    const current = use && currentUseLine(use, plan.blocksPerNodeClaimed)
    const tty = process.stderr.isTTY === true
    const sim = flags.simulate
      ? await simulateCluster({
          ...input,
          nodeChurn: flags['node-churn'] === undefined ? undefined : parseFraction(flags['node-churn'], 'node churn'),
          onProgress: tty
            ? (done, total) =>
                process.stderr.write(
                  done < total
                    ? `\rsimulating: ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} allocations (${Math.floor((100 * done) / total)}%)`
                    : '\r\x1b[K',
                )
            : undefined,
        })
      : undefined
    this.out(render(flags.output, {plan, current, simulation: sim}, () => planView(plan, current, sim)))
  }
}
