import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {nodesTable} from '../../cli/views.js'
import {listNodes} from '../../lib/ipam/node.js'
import {nodeUsage} from '../../lib/ipam/node-removal.js'

export default class NodeList extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'List node records, their labels, and how many blocks and addresses each holds.'
  static override examples = ['<%= config.bin %> <%= command.id %> -o yaml']
  static override flags = {output: outputFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(NodeList)
    const ctx = await this.ctx(flags)
    const [records, usage] = await Promise.all([listNodes(ctx.store), nodeUsage(ctx)])
    const nodes = records.map((n) => ({...n, ...(usage.get(n.name) ?? {blocks: 0, addresses: 0})}))
    this.out(render(flags.output, nodes, () => nodesTable(nodes)))
  }
}
