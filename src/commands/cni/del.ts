import {BaseCommand} from '../../cli/base.js'
import {podFlags, podRequest} from '../../cli/cni-flags.js'
import {manualDel} from '../../plugins/main/manual.js'

export default class CniDel extends BaseCommand {
  // No storeMode: the datastore is opened by the plugin code, with the mode of the CNI verb (src/lib/node-ipam/plugin-datastore.ts).
  static override summary = 'Undo cni add: remove the veth, routes and endpoint record, and release the addresses.'
  static override description =
    'Idempotent: deleting a pod that is already gone, or whose namespace no longer exists, succeeds.'
  static override examples = ['<%= config.bin %> <%= command.id %> --netns demo --pod web-0 --namespace default']
  static override flags = {...podFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(CniDel)
    const id = await manualDel(podRequest(flags, this.settings(flags)))
    this.out(`Deleted pod network of container ${id}\n`)
  }
}
