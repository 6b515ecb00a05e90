import {BaseCommand} from '../../cli/base.js'
import {lockDatastore} from '../../lib/ipam/cluster-info.js'

export default class DatastoreLock extends BaseCommand {
  // It adds state (ClusterInformation), so like every command that adds state it creates a missing store.
  static override storeMode = 'create' as const
  static override summary = 'Lock the datastore (ClusterInformation datastoreReady=false) for offline IPAM repair.'
  static override description =
    'While locked, the CNI plugin refuses new address assignments. Lock, run ipam check -o report.json, then ipam release --from-report report.json, then datastore unlock. Creates ClusterInformation default with a new cluster GUID if it is missing. Locking an already locked datastore changes nothing.'
  static override examples = ['<%= config.bin %> <%= command.id %>']

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreLock)
    await lockDatastore(await this.ctx(flags))
    this.out('Datastore locked.\n')
  }
}
