import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {podFlags, podRequest} from '../../cli/cni-flags.js'
import {manualDel} from '../../plugins/main/manual.js'

const NETNS_TEXT = {
  removed: (ns: string) => `; removed netns ${ns}`,
  busy: (ns: string) => `; kept netns ${ns}: other interfaces are still in it`,
  kept: () => '',
  'not-ours': () => '',
  absent: () => '',
} as const

export default class CniDel extends BaseCommand {
  // No storeMode: the datastore is opened by the plugin code, with the mode of the CNI verb (src/lib/node-ipam/plugin-datastore.ts).
  static override summary = 'Undo cni add: remove the veth, routes and endpoint record, and release the addresses.'
  static override description =
    'Idempotent: deleting a pod that is already gone, or whose namespace no longer exists, succeeds. ' +
    'A namespace that cni add --create-netns made is removed too once no interface but lo is left in it (--keep-netns keeps it); ' +
    'a namespace ipamctl did not create is never removed.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --netns demo --pod web-0 --namespace default',
    '<%= config.bin %> <%= command.id %> --netns demo --pod web-0 --network storage',
  ]
  static override flags = {
    ...podFlags,
    'keep-netns': Flags.boolean({summary: 'Keep the namespace even if cni add --create-netns made it.'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniDel)
    const r = await manualDel({...podRequest(flags, this.settings(flags)), keepNetns: flags['keep-netns']})
    this.out(`Deleted pod network of container ${r.containerId} (${r.ifName})${NETNS_TEXT[r.netns](flags.netns)}\n`)
  }
}
