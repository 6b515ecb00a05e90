import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {unlockDatastore} from '../../lib/ipam/cluster-info.js'

export default class DatastoreUnlock extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary =
    'Unlock the datastore (ClusterInformation datastoreReady=true) so the CNI plugin assigns addresses again.'
  static override description =
    'Asks for confirmation on a terminal; scripts pass --yes. Without a terminal and without --yes it refuses (exit status 2) and changes nothing.'
  static override examples = ['<%= config.bin %> <%= command.id %> --yes']
  static override flags = {yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'})}

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreUnlock)
    const ctx = await this.ctx(flags)
    if (!(await confirmOrRefuse('Unlock the datastore?', flags.yes))) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    await unlockDatastore(ctx)
    this.out('Datastore unlocked.\n')
  }
}
