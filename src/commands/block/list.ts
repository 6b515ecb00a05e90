import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {blocksTable} from '../../cli/views.js'
import {formatCidr} from '../../lib/net/cidr.js'
import {listBlocks} from '../../lib/ipam/query.js'

export default class BlockList extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'List allocation blocks with their owner and usage.'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --host node-1 -o json',
  ]
  static override flags = {
    host: Flags.string({summary: 'Only blocks affine to this host.'}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(BlockList)
    const blocks = await listBlocks(await this.ctx(flags), {host: flags.host})
    const data = blocks.map(({block: b}) => ({
      cidr: formatCidr(b.cidr),
      affinity: b.affinity,
      affinityClaimTime: b.affinityClaimTime ?? null,
      inUse: b.allocations.length - b.unallocated.length,
      free: b.unallocated.length,
      sequenceNumber: b.sequenceNumber,
    }))
    this.out(render(flags.output, data, () => blocksTable(blocks)))
  }
}
