import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {plainTable} from '../../cli/table.js'
import {listWorkloadEndpoints} from '../../lib/workload/endpoint.js'

export default class CniList extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'List workload endpoints (wired pods), optionally of one node.'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --node node-1 -o json',
  ]
  static override flags = {node: Flags.string({summary: 'Only endpoints on this node.'}), output: outputFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(CniList)
    const ctx = await this.ctx(flags)
    const weps = (await listWorkloadEndpoints(ctx.store, flags.node)).map(({kv: _kv, ...w}) => w)
    this.out(
      render(flags.output, weps, () =>
        plainTable(
          ['NODE', 'NAMESPACE', 'WORKLOAD', 'CONTAINER', 'INTERFACE', 'IPS'],
          weps.map((w) => [w.node, w.namespace, w.pod ?? '', w.containerID, w.interfaceName, w.ipNetworks.join(',')]),
        ),
      ),
    )
  }
}
