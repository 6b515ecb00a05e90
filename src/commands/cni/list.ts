import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {plainTable} from '../../cli/table.js'
import {CheckMismatchError, type MismatchSide} from '../../lib/errors.js'
import {checkEndpoint, type EndpointState} from '../../lib/node-ipam/endpoint-check.js'
import {localNodename} from '../../lib/node-ipam/nodename.js'
import {listWorkloadEndpoints} from '../../lib/workload/endpoint.js'

export default class CniList extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'List workload endpoints (wired pods), optionally of one node.'
  static override description =
    'With --check, each endpoint of this node (or of --node, which must then be this host) is checked as cni check does: ' +
    'its addresses against its IPAM handle, its interfaces, addresses and routes against the record. STATE is ok or the ' +
    'side that is wrong (pod, host, datastore) with the first difference; the exit status is 7 if any endpoint is not ok.'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --node node-1 -o json',
    '<%= config.bin %> <%= command.id %> --check',
  ]
  static override flags = {
    node: Flags.string({summary: 'Only endpoints on this node.'}),
    check: Flags.boolean({summary: 'Run CHECK on each endpoint of this host and show its state (needs root).'}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniList)
    const ctx = await this.ctx(flags)
    const node = flags.check ? (flags.node ?? localNodename()) : flags.node
    const weps = (await listWorkloadEndpoints(ctx.store, node)).map(({kv: _kv, ...w}) => w)
    const states: EndpointState[] = []
    if (flags.check) for (const w of weps) states.push(await checkEndpoint(ctx, w))
    const rows = weps.map((w, i) => (flags.check ? {...w, check: states[i]} : w))
    this.out(
      render(flags.output, rows, () =>
        plainTable(
          ['NODE', 'NAMESPACE', 'WORKLOAD', 'CONTAINER', 'INTERFACE', 'IPS', ...(flags.check ? ['STATE'] : [])],
          weps.map((w, i) => [
            w.node,
            w.namespace,
            w.pod ?? '',
            w.containerID,
            w.interfaceName,
            w.ipNetworks.join(','),
            ...(flags.check ? [stateText(states[i]!)] : []),
          ]),
        ),
      ),
    )
    const bad = states.filter((s) => s.state !== 'ok')
    if (bad.length > 0) {
      const first = bad[0]!
      throw new CheckMismatchError(
        first.state as MismatchSide,
        `${bad.length} of ${states.length} endpoints differ; first: ${first.detail ?? ''}`,
      )
    }
  }
}

const stateText = (s: EndpointState): string => (s.state === 'ok' ? 'ok' : `${s.state} side: ${s.detail ?? ''}`)
