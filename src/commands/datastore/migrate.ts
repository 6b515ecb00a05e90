import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {migrationPlanText} from '../../cli/views.js'
import {ConflictError, StoreMissingError} from '../../lib/errors.js'
import {applyMigration, planMigration} from '../../lib/store/admin.js'
import type {DatastoreSettings} from '../../lib/store/settings.js'
import {embeddedDescription} from '../../lib/store/sqlite.js'
import type {OpenMode, Store} from '../../lib/store/store.js'

export default class DatastoreMigrate extends BaseCommand {
  // The source is only read; the target is opened below with the mode each step needs.
  static override storeMode = 'read' as const
  static override summary = 'Copy every Calico/ipamctl key from the embedded store to etcd, or back.'
  static override description =
    `The source is the other datastore type, configured by the usual flags, environment and config file: --to etcdv3 copies from the embedded file (--datastore-path) to the etcd endpoints, --to embedded copies from etcd into the embedded file.
A source that does not exist or holds no key under /calico/ is refused (exit 3); the source is never created or changed. An embedded target that does not exist is created.
Stop allocating while migrating: if the source changes during the copy, the command says so and exits 4; if the target is written to by someone else, it stops (exit 4).
A target that already holds keys is refused unless --force, which makes it an exact copy of the source: it first lists the keys it would overwrite and remove, then asks on a terminal; scripts pass --yes. --dry-run prints the same plan and changes nothing.
Keys are written first, then the target's extra keys are deleted, in transactions of at most 100 operations.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --to etcdv3 --etcd-endpoints https://10.0.0.1:2379',
    '<%= config.bin %> <%= command.id %> --to embedded --etcd-endpoints http://127.0.0.1:2379 --datastore-path /var/lib/ipamctl/ipam.db --force --dry-run',
  ]
  static override flags = {
    to: Flags.string({required: true, options: ['etcdv3', 'embedded'], summary: 'Target datastore type.'}),
    force: Flags.boolean({summary: 'Replace the contents of a non-empty target.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask before overwriting or removing keys of the target.'}),
    'dry-run': Flags.boolean({summary: 'Print what would be copied, overwritten and removed; change nothing.'}),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreMigrate)
    const base = this.settings(flags, {bothTypes: true})
    const to = flags.to as 'etcdv3' | 'embedded'
    const dryRun = flags['dry-run']
    const targetSettings: DatastoreSettings = {...base, type: to}
    const source = await this.openStore({...base, type: to === 'etcdv3' ? 'embedded' : 'etcdv3'})
    // A missing embedded target is an empty one; it is created only when the copy really starts.
    const target = await this.openExisting(targetSettings, dryRun ? 'read' : 'update')
    const targetName = target?.description ?? embeddedDescription(targetSettings.path)
    const plan = await planMigration(source, target, {force: flags.force, target: targetName})
    const text = migrationPlanText(plan)
    if (dryRun) {
      this.out(`${text}Dry run: nothing was changed.\n`)
      return
    }
    let shown = false
    const show = () => {
      shown = true
      this.out(text)
    }
    const destroys = plan.overwritten.length + plan.remove.length
    if (destroys > 0) {
      const question = `Overwrite ${plan.overwritten.length} and remove ${plan.remove.length} keys of ${targetName}?`
      if (!(await confirmOrRefuse(question, flags.yes, show))) {
        this.out('Aborted; nothing was changed.\n')
        return
      }
    }
    if (!shown) show()
    const r = await applyMigration(source, target ?? (await this.openStore(targetSettings, 'create')), plan, {
      interrupt: this.interrupt,
      rerun: this.commandLine(['--force', '--yes']),
    })
    this.out(
      `Copied ${r.copied} keys from ${plan.source} to ${targetName}${r.removed ? `; removed ${r.removed} keys the source does not have` : ''}\n`,
    )
    if (r.sourceChanged) {
      throw new ConflictError(
        'the source changed while copying; stop all writers and run the migration again with --force',
      )
    }
  }

  private async openExisting(settings: DatastoreSettings, mode: OpenMode): Promise<Store | undefined> {
    try {
      return await this.openStore(settings, mode)
    } catch (err) {
      if (err instanceof StoreMissingError) return undefined
      throw err
    }
  }
}
