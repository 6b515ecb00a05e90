import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {toYaml} from '../../cli/render.js'
import {stdoutColour} from '../../cli/style.js'
import {blockMapView} from '../../cli/views.js'
import {parseJson} from '../../lib/codec/gojson.js'
import {decodeBlock, garbageCollect} from '../../lib/ipam/block.js'
import {blockMapRows} from '../../lib/ipam/block-map.js'
import {loadConfig} from '../../lib/ipam/context.js'
import {findBlock} from '../../lib/ipam/query.js'
import {listReservations, reservedMatcher} from '../../lib/ipam/reservation.js'
import {formatCidr} from '../../lib/net/cidr.js'

export default class BlockInspect extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = "Print a block's stored JSON exactly as it is in the datastore, or draw it as a map."
  static override description =
    'The default (json) output is the stored value byte for byte; yaml converts it, keeping sequence numbers exact. --map draws one cell per address, 16 to a row: A allocated, . free, R reserved (IPReservation), C cooling down; coloured squares on a colour terminal.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> 10.65.79.0/26',
    '<%= config.bin %> <%= command.id %> 10.65.79.5 | jq .',
    '<%= config.bin %> <%= command.id %> 10.65.79.0/26 --map',
  ]
  static override args = {
    block: Args.string({required: true, description: 'Block CIDR, or any address inside the block.'}),
  }
  static override flags = {
    output: Flags.option({
      char: 'o',
      summary: 'Output format.',
      options: ['json', 'yaml'] as const,
      default: 'json' as const,
    })(),
    map: Flags.boolean({summary: 'Draw the block as a grid of cells with a legend instead of printing its JSON.'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(BlockInspect)
    const ctx = await this.ctx(flags)
    const kv = await findBlock(ctx, args.block)
    if (!flags.map) {
      this.out(flags.output === 'yaml' ? toYaml(parseJson(kv.value)) : `${kv.value}\n`)
      return
    }
    const block = decodeBlock(kv.value)
    // Expired cooldowns are shown free, as the next allocation will treat them; nothing is written back.
    garbageCollect(block, (await loadConfig(ctx)).ipCooldownSeconds, ctx.clock.now())
    const reserved = reservedMatcher(await listReservations(ctx))
    const title = `Block ${formatCidr(block.cidr)}, affinity ${block.affinity ?? '<none>'}`
    this.out(blockMapView(title, blockMapRows(block, reserved), stdoutColour()))
  }
}
