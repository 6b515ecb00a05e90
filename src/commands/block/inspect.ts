import {Args} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {findBlock} from '../../lib/ipam/query.js'

export default class BlockInspect extends BaseCommand {
  static override summary = 'Print a block\'s stored JSON exactly as it is in the datastore.'
  static override examples = ['<%= config.bin %> <%= command.id %> 10.65.79.0/26', '<%= config.bin %> <%= command.id %> 10.65.79.5 | jq .']
  static override args = {block: Args.string({required: true, description: 'Block CIDR, or any address inside the block.'})}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(BlockInspect)
    const kv = await findBlock(await this.ctx(flags), args.block)
    this.out(`${kv.value}\n`)
  }
}
