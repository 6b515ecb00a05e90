import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {statusTable} from '../../cli/views.js'
import {DatastoreUnavailableError, StoreMissingError} from '../../lib/errors.js'
import {storeStatus} from '../../lib/store/admin.js'
import type {Store} from '../../lib/store/store.js'

export default class DatastoreStatus extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'Show which datastore is in use, where each setting came from, and whether it is healthy.'
  static override description =
    'On etcd v3, every endpoint of the cluster is asked for its own status: one row per member with whether it answers, whether it leads, its database size and raft index (a member that does not answer is listed, and the datastore stays healthy while the others do). Exit status 5 if the datastore cannot be reached, 3 if the embedded store file does not exist (it is not created).'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    'DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=https://10.0.0.1:2379 <%= config.bin %> <%= command.id %> -o json',
  ]
  static override flags = {output: outputFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreStatus)
    const settings = this.settings(flags)
    let store: Store | undefined
    let openError: unknown
    try {
      store = await this.openStore(settings)
    } catch (err) {
      if (!(err instanceof DatastoreUnavailableError) && !(err instanceof StoreMissingError)) throw err
      openError = err
    }
    const st = await storeStatus(store, settings, openError)
    this.out(render(flags.output, st, () => statusTable(st)))
    if (openError instanceof StoreMissingError) throw openError
    if (!st.healthy) throw new DatastoreUnavailableError(st.error ?? 'datastore unavailable')
  }
}
