import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {podFlags, podRequest} from '../../cli/cni-flags.js'
import {render} from '../../cli/render.js'
import {plainTable} from '../../cli/table.js'
import {manualAdd} from '../../plugins/main/manual.js'
import {encodeResult} from '../../lib/cni/result.js'

export default class CniAdd extends BaseCommand {
  // No storeMode: the datastore is opened by the plugin code, with the mode of the CNI verb (src/lib/node-ipam/plugin-datastore.ts).
  static override summary = 'Wire a pod by hand: allocate addresses and create its veth, routes and endpoint record.'
  static override description =
    'Runs the same code as the ipamctl-cni plugin, in-process, against the datastore selected by the usual flags. Needs root.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --netns demo --create-netns --pod web-0 --namespace default',
    '<%= config.bin %> <%= command.id %> --netns /var/run/netns/demo --ip 10.65.0.10 -o json',
  ]
  static override flags = {
    ...podFlags,
    'create-netns': Flags.boolean({summary: 'Create the named network namespace if it does not exist.'}),
    ip: Flags.string({summary: 'Request this specific address.'}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniAdd)
    const {containerId, result} = await manualAdd({
      ...podRequest(flags, this.settings(flags)),
      createNetns: flags['create-netns'],
      ip: flags.ip,
    })
    const table = () =>
      `${plainTable(
        ['INTERFACE', 'MAC', 'ADDRESS', 'SANDBOX'],
        (result.interfaces ?? []).map((i, idx) => [
          i.name,
          i.mac ?? '',
          result.ips
            .filter((ip) => ip.interface === idx)
            .map((ip) => ip.address)
            .join(','),
          i.sandbox ?? '(host)',
        ]),
      )}container ID: ${containerId}\n`
    this.out(render(flags.output, encodeResult(result, '1.0.0'), table))
  }
}
