import {Args} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {poolsTable} from '../../cli/views.js'
import {getPool} from '../../lib/ipam/pool-admin.js'
import {poolResource} from '../../lib/ipam/pool.js'

export default class PoolGet extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'Show one IP pool, by name or CIDR.'
  static override examples = ['<%= config.bin %> <%= command.id %> default-ipv4 -o yaml']
  static override args = {pool: Args.string({required: true, description: 'Pool name or CIDR.'})}
  static override flags = {output: outputFlag}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PoolGet)
    const pool = await getPool(await this.ctx(flags), args.pool)
    this.out(render(flags.output, poolResource(pool), () => poolsTable([pool])))
  }
}
