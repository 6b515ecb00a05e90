import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {parseKeyValues} from '../../lib/args.js'
import {upsertNode} from '../../lib/ipam/node.js'

export default class NodeCreate extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = "Create a node record, or replace its labels (used by pools' node selectors)."
  static override description =
    "Labels that take a node out of a pool's node selector do not touch its addresses there: the node gives up each of its blocks in that pool once the block is empty (at the release that empties it, or at the node's next allocation), as Calico does."
  static override examples = ['<%= config.bin %> <%= command.id %> node-1 --label zone=a --label rack=r12']
  static override args = {name: Args.string({required: true, description: 'Node (host) name.'})}
  static override flags = {label: Flags.string({multiple: true, summary: 'Label KEY=VALUE (repeatable).'})}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(NodeCreate)
    const ctx = await this.ctx(flags)
    const r = await upsertNode(ctx.store, args.name, parseKeyValues(flags.label, 'label'), ctx.clock.now())
    this.out(`${r.created ? 'Created' : 'Updated'} node ${r.node.name}\n`)
  }
}
