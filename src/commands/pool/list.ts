import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {poolsTable} from '../../cli/views.js'
import {listPools} from '../../lib/ipam/context.js'
import {poolResource} from '../../lib/ipam/pool.js'

export default class PoolList extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'List IP pools (calicoctl get ippools -o wide columns).'
  static override aliases = ['pool ls']
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> -o yaml']
  static override flags = {output: outputFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(PoolList)
    const pools = await listPools(await this.ctx(flags))
    this.out(render(flags.output, pools.map(poolResource), () => poolsTable(pools)))
  }
}
