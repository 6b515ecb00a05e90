import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {toYaml} from '../../cli/render.js'
import {parseJson} from '../../lib/codec/gojson.js'
import {findBlock} from '../../lib/ipam/query.js'

export default class BlockInspect extends BaseCommand {
  static override summary = 'Print a block\'s stored JSON exactly as it is in the datastore.'
  static override description = 'The default (json) output is the stored value byte for byte; yaml converts it, keeping sequence numbers exact.'
  static override examples = ['<%= config.bin %> <%= command.id %> 10.65.79.0/26', '<%= config.bin %> <%= command.id %> 10.65.79.5 | jq .']
  static override args = {block: Args.string({required: true, description: 'Block CIDR, or any address inside the block.'})}
  static override flags = {
    output: Flags.option({char: 'o', summary: 'Output format.', options: ['json', 'yaml'] as const, default: 'json' as const})(),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(BlockInspect)
    const kv = await findBlock(await this.ctx(flags), args.block)
    this.out(flags.output === 'yaml' ? toYaml(parseJson(kv.value)) : `${kv.value}\n`)
  }
}
