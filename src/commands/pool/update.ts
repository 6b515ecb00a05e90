import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {ValidationError} from '../../lib/errors.js'
import {setPoolDisabled} from '../../lib/ipam/pool-admin.js'

export default class PoolUpdate extends BaseCommand {
  static override summary = 'Enable or disable an IP pool (a disabled pool hands out no new addresses).'
  static override description =
    'Exactly one of --enable and --disable. The change is one write guarded by the revision read, so a concurrent edit of the pool is never overwritten; a pool already in the asked state is left untouched.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> old-pool --enable',
    '<%= config.bin %> <%= command.id %> 10.65.0.0/16 --disable',
  ]
  static override storeMode = 'update' as const
  static override args = {pool: Args.string({required: true, description: 'Pool name or CIDR.'})}
  static override flags = {
    enable: Flags.boolean({summary: 'Let the pool hand out addresses again.'}),
    disable: Flags.boolean({summary: 'Stop new allocations from the pool (allocated addresses stay).'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PoolUpdate)
    if (flags.enable === flags.disable) throw new ValidationError('give exactly one of --enable and --disable')
    const r = await setPoolDisabled(await this.ctx(flags), args.pool, flags.disable)
    const state = flags.disable ? 'disabled' : 'enabled'
    this.out(
      r.changed
        ? `IP pool ${r.pool.name} (${r.pool.spec.cidr}) is now ${state}\n`
        : `IP pool ${r.pool.name} (${r.pool.spec.cidr}) was already ${state}; nothing was changed\n`,
    )
  }
}
