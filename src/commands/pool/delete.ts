import {Args, Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {render} from '../../cli/render.js'
import {deletePool, getPool, planPoolDelete, type PoolDeletion} from '../../lib/ipam/pool-admin.js'

const OUTCOME = {
  released: 'block kept without an owner: it holds addresses',
  'deleted-block': 'empty block deleted',
  stale: 'affinity without its block: key deleted',
} as const

export default class PoolDelete extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = "Delete an IP pool: disable it, release every host's block affinities, then remove it."
  static override description = [
    'Addresses already allocated from the pool stay allocated; their blocks lose their owner and are removed when their last address is released.',
    '--dry-run prints what the delete would do now (the same data as the real run with -o json) and changes nothing.',
    'Interrupted (SIGINT/SIGTERM) before the pool itself is deleted, it re-enables the pool it disabled, prints one line saying so and how many affinities were already released, and exits 130.',
  ].join('\n\n')
  static override aliases = ['pool rm']
  static override examples = [
    '<%= config.bin %> <%= command.id %> old-pool --dry-run',
    '<%= config.bin %> <%= command.id %> old-pool --yes',
  ]
  static override args = {pool: Args.string({required: true, description: 'Pool name or CIDR.'})}
  static override flags = {
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'}),
    'dry-run': Flags.boolean({summary: 'Only print what would be done.'}),
    output: outputFlag,
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PoolDelete)
    const ctx = await this.ctx(flags)
    if (flags['dry-run']) {
      const plan = await planPoolDelete(ctx, args.pool)
      this.out(render(flags.output, view(plan, true), () => dryRunText(plan)))
      return
    }
    const pool = await getPool(ctx, args.pool)
    if (!(await confirmOrRefuse(`Delete IP pool ${pool.name} (${pool.spec.cidr})?`, flags.yes))) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    const r = await deletePool(ctx, pool.name)
    this.out(
      render(
        flags.output,
        view(r, false),
        () =>
          `Successfully deleted IP pool ${r.pool.name} (${r.pool.spec.cidr}); released ${r.affinities.length} block affinities\n`,
      ),
    )
  }
}

/** The same shape for the plan and the result, so a dry run can be checked against the real run. */
function view(d: PoolDeletion, dryRun: boolean) {
  return {
    dryRun,
    pool: d.pool.name,
    cidr: d.pool.spec.cidr,
    disables: d.disables,
    affinities: d.affinities,
    blocksLeft: d.blocksLeft,
  }
}

function dryRunText(d: PoolDeletion): string {
  const lines = [
    `Would delete IP pool ${d.pool.name} (${d.pool.spec.cidr}); would release ${d.affinities.length} block affinities`,
  ]
  if (d.disables) lines.unshift(`Would disable IP pool ${d.pool.name} first`)
  for (const a of d.affinities) lines.push(`  host ${a.host}: ${a.block} (${OUTCOME[a.result]})`)
  if (d.blocksLeft.length > 0)
    lines.push(`Blocks left until their last address is released: ${d.blocksLeft.join(', ')}`)
  lines.push('Dry run: nothing was changed.')
  return `${lines.join('\n')}\n`
}
