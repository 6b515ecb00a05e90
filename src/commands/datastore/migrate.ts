import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {ConflictError} from '../../lib/errors.js'
import {migrate} from '../../lib/store/admin.js'

export default class DatastoreMigrate extends BaseCommand {
  static override summary = 'Copy every Calico/ipamctl key from the embedded store to etcd, or back.'
  static override description = `The source is the other datastore type, configured by the usual flags, environment and config file: --to etcdv3 copies from the embedded file (--datastore-path) to the etcd endpoints, --to embedded copies from etcd into the embedded file.
Stop allocating while migrating: if the source changes during the copy, the command says so and exits 4.
A target that already holds keys is refused unless --force, which makes it an exact copy of the source.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --to etcdv3 --etcd-endpoints https://10.0.0.1:2379',
    '<%= config.bin %> <%= command.id %> --to embedded --etcd-endpoints http://127.0.0.1:2379 --datastore-path /var/lib/ipamctl/ipam.db --force',
  ]
  static override flags = {
    to: Flags.string({required: true, options: ['etcdv3', 'embedded'], summary: 'Target datastore type.'}),
    force: Flags.boolean({summary: 'Replace the contents of a non-empty target.'}),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreMigrate)
    const base = this.settings(flags)
    const to = flags.to as 'etcdv3' | 'embedded'
    const source = await this.openStore({...base, type: to === 'etcdv3' ? 'embedded' : 'etcdv3'})
    const target = await this.openStore({...base, type: to})
    const r = await migrate(source, target, {force: flags.force, interrupt: this.interrupt, rerun: this.commandLine(['--force'])})
    this.out(`Copied ${r.copied} keys from ${source.description} to ${target.description}${r.removed ? `; removed ${r.removed} keys the source does not have` : ''}\n`)
    if (r.sourceChanged) {
      throw new ConflictError('the source changed while copying; stop all writers and run the migration again with --force')
    }
  }
}
