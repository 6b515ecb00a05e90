import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {renderRun} from '../../cli/render.js'
import {commitSplit, planSplit, splitLines} from '../../lib/ipam/split.js'

export default class IpamSplit extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Split an IP pool into NUMBER equal pools named split-<name>-<i>, in one transaction.'
  static override description =
    "The datastore must be locked first (ipamctl datastore lock). NUMBER is a power of 2 greater than 1 and at most 64; each child keeps the pool's spec, is enabled, and must not be smaller than the block size. The old pool is replaced without releasing any block affinity. With --dry-run nothing is changed and nothing is asked: the output is what the real run would print, under a line saying it is a dry run."
  static override examples = [
    '<%= config.bin %> <%= command.id %> 4 --name default-ipv4-ippool --dry-run',
    '<%= config.bin %> <%= command.id %> 4 --name default-ipv4-ippool --yes',
    '<%= config.bin %> <%= command.id %> 2 --cidr 10.65.0.0/16',
  ]
  static override args = {
    number: Args.string({required: true, description: 'How many pools to split into (a power of 2).'}),
  }
  static override flags = {
    name: Flags.string({summary: 'Name of the IP pool to split.'}),
    cidr: Flags.string({summary: 'CIDR of the IP pool to split.'}),
    'dry-run': Flags.boolean({summary: 'Change nothing; print what the real run would print.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'}),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {args, flags} = await this.parse(IpamSplit)
    const ctx = await this.ctx(flags)
    const plan = await planSplit(ctx, {name: flags.name, cidr: flags.cidr, number: args.number})
    // Upstream prints the first line without a newline and the last one without a trailing newline;
    // the wording is kept for scripts that match it, the line breaks are fixed.
    const show = (dryRun: boolean) => this.out(renderRun('table', dryRun, {}, () => `${splitLines(plan).join('\n')}\n`))
    if (flags['dry-run']) {
      show(true)
      return
    }
    const n = plan.children.length
    if (
      !(await confirmOrRefuse(`Split IP pool ${plan.old.name} (${plan.old.spec.cidr}) into ${n} pools?`, flags.yes))
    ) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    await commitSplit(ctx, plan)
    show(false)
  }
}
