import {Args, Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {renderRun} from '../../cli/render.js'
import {executeNodeRemoval, type NodeRemoval, planNodeRemoval} from '../../lib/ipam/node-removal.js'

export default class NodeRemove extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Remove a node that is gone: release its block affinities and, optionally, its addresses.'
  static override description = [
    'Blocks the node owned that are empty are deleted; blocks that still hold addresses lose their owner and are deleted when their last address is released (other nodes can allocate from them meanwhile unless strict affinity is on).',
    "With --release-addresses, every address whose node attribute is this node is released (by handle where it has one) and the node's workload endpoint records are deleted. The node record is deleted last.",
    'With --dry-run nothing is changed and nothing is asked: the output is what the real run would print, under a line saying it is a dry run.',
  ].join('\n\n')
  static override aliases = ['node rm']
  static override examples = [
    '<%= config.bin %> <%= command.id %> node-7 --release-addresses --dry-run',
    '<%= config.bin %> <%= command.id %> node-7 --release-addresses --yes',
  ]
  static override args = {name: Args.string({required: true, description: 'Node (host) name.'})}
  static override flags = {
    'release-addresses': Flags.boolean({
      summary: "Also release the addresses of the node's workloads and delete its workload endpoints.",
    }),
    'dry-run': Flags.boolean({summary: 'Change nothing; print what the real run would print.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'}),
    output: outputFlag,
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {args, flags} = await this.parse(NodeRemove)
    const ctx = await this.ctx(flags)
    const releaseAddresses = flags['release-addresses']
    // Read first, so an unknown node fails before anyone is asked anything.
    const plan = await planNodeRemoval(ctx, args.name, {releaseAddresses})
    const show = (r: NodeRemoval, dryRun: boolean) =>
      this.out(
        renderRun(flags.output, dryRun, {node: args.name, ...r}, () => summaryText(args.name, releaseAddresses, r)),
      )
    if (flags['dry-run']) {
      show(plan.predicted, true)
      return
    }
    const p = plan.predicted
    const what = releaseAddresses ? `, ${p.addressesReleased} addresses, ${p.endpointsDeleted} workload endpoints` : ''
    if (
      !(await confirmOrRefuse(`Remove node ${args.name} (${p.affinitiesReleased} block affinities${what})?`, flags.yes))
    ) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    show(await executeNodeRemoval(ctx, plan), false)
  }
}

function summaryText(node: string, releaseAddresses: boolean, r: NodeRemoval): string {
  const lines = [
    `Removed node ${node}`,
    `Released ${r.affinitiesReleased} block affinities: ${r.blocksDeleted} empty blocks deleted, ${r.blocksKeptNonAffine} non-empty blocks kept without an owner`,
  ]
  if (releaseAddresses)
    lines.push(`Released ${r.addressesReleased} addresses and deleted ${r.endpointsDeleted} workload endpoints`)
  return `${lines.join('\n')}\n`
}
