import {BaseCommand} from '../../cli/base.js'
import {podFlags, podRequest} from '../../cli/cni-flags.js'
import {manualCheck} from '../../plugins/main/manual.js'

export default class CniCheck extends BaseCommand {
  // No storeMode: the datastore is opened by the plugin code, with the mode of the CNI verb (src/lib/node-ipam/plugin-datastore.ts).
  static override summary = 'Check that a pod is still wired as cni add left it (addresses, links, routes, records).'
  static override examples = ['<%= config.bin %> <%= command.id %> --netns demo --pod web-0 --namespace default']
  static override flags = {...podFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(CniCheck)
    await manualCheck(podRequest(flags, this.settings(flags)))
    this.out('OK: the pod network is as expected\n')
  }
}
