import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {deletePool, getPool} from '../../lib/ipam/pool-admin.js'

export default class PoolDelete extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Delete an IP pool: disable it, release every host\'s block affinities, then remove it.'
  static override description = 'Addresses already allocated from the pool stay allocated; their blocks lose their owner and are removed when their last address is released.'
  static override aliases = ['pool rm']
  static override examples = ['<%= config.bin %> <%= command.id %> old-pool --yes']
  static override args = {pool: Args.string({required: true, description: 'Pool name or CIDR.'})}
  static override flags = {yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'})}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PoolDelete)
    const ctx = await this.ctx(flags)
    const pool = await getPool(ctx, args.pool)
    if (!(await confirmOrRefuse(`Delete IP pool ${pool.name} (${pool.spec.cidr})?`, flags.yes))) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    const r = await deletePool(ctx, pool.name)
    this.out(`Successfully deleted IP pool ${r.pool.name} (${r.pool.spec.cidr}); released ${r.affinitiesReleased} block affinities\n`)
  }
}
