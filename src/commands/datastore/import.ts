import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {ConflictError} from '../../lib/errors.js'
import {REPORT_MAX_BYTES, readTextFile} from '../../lib/files.js'
import {exportStore, parseExport} from '../../lib/resources/backup.js'
import {applyMigration, planMigration} from '../../lib/store/admin.js'

export default class DatastoreImport extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = 'Restore a datastore export (ours, or one made by calicoctl datastore migrate export).'
  static override description =
    `The whole file is checked before anything is written. The target must be empty: a store that already holds keys under /calico/ is refused (exit 4) unless --force, which makes it an exact copy of the file (its other keys are removed) after asking on a terminal; scripts pass --yes.
Keys are written in transactions of at most 100, each guarded so that another writer stops the import (exit 4); an interrupted import is finished by running it again with --force. Progress is shown on a terminal.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> -f backup.txt',
    '<%= config.bin %> <%= command.id %> -f backup.txt --datastore etcdv3 --etcd-endpoints http://10.0.0.1:2379',
  ]
  static override flags = {
    file: Flags.string({char: 'f', required: true, summary: 'Export file; "-" reads stdin.'}),
    force: Flags.boolean({summary: 'Replace the contents of a non-empty store with the file.'}),
    yes: Flags.boolean({char: 'y', summary: 'With --force: do not ask before overwriting and removing keys.'}),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreImport)
    const ctx = await this.ctx(flags)
    const entries = parseExport(readTextFile(flags.file, 'export', REPORT_MAX_BYTES), flags.file, ctx.clock.now())
    const source = await exportStore(entries)
    const plan = await planMigration(source, ctx.store, {force: flags.force, target: ctx.store.description})
    const destroys = plan.overwritten.length + plan.remove.length
    if (destroys > 0) {
      const q = `Overwrite ${plan.overwritten.length} and remove ${plan.remove.length} keys of ${ctx.store.description}?`
      if (!(await confirmOrRefuse(q, flags.yes))) {
        this.out('Aborted; nothing was changed.\n')
        return
      }
    }
    const tty = process.stderr.isTTY
    const r = await applyMigration(source, ctx.store, plan, {
      interrupt: this.interrupt,
      rerun: this.commandLine(['--force', '--yes']),
      onProgress: tty ? (n, total) => process.stderr.write(`\rimported ${n} of ${total} keys`) : undefined,
    })
    if (tty) process.stderr.write('\n')
    if (r.sourceChanged) throw new ConflictError('internal: the parsed export changed while importing')
    this.out(`Imported ${r.copied} keys from ${flags.file}${r.removed ? `; removed ${r.removed} other keys` : ''}\n`)
  }
}
