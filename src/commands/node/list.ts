import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {nodesTable} from '../../cli/views.js'
import {listNodes} from '../../lib/ipam/node.js'

export default class NodeList extends BaseCommand {
  static override summary = 'List node records and their labels.'
  static override examples = ['<%= config.bin %> <%= command.id %> -o yaml']
  static override flags = {output: outputFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(NodeList)
    const nodes = await listNodes((await this.ctx(flags)).store)
    this.out(render(flags.output, nodes, () => nodesTable(nodes)))
  }
}
