import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {terminalProgress} from '../../cli/progress.js'
import {writeExport, writeExportFile} from '../../lib/resources/backup.js'
import {CALICO_PREFIX} from '../../lib/store/admin.js'

export default class DatastoreExport extends BaseCommand {
  static override storeMode = 'read' as const
  // A signal stops the export at once (it writes nothing to the store); the partial file goes with it.
  static override interruptible = true
  static override summary =
    'Write every resource and all IPAM state in the format of calicoctl datastore migrate export.'
  static override description =
    `The file holds the v3 resources (IPPools, Nodes, IPReservations, WorkloadEndpoints and any other Calico resource in the store) as YAML Lists, a "===" line, the ClusterInformation as JSON, another "===" line, then the IPAM state as JSON (block_affinities, blocks, handles, config). Resources lose their uid, resourceVersion and creationTimestamp, as upstream's export does; IPAM state is copied byte for byte. datastore import restores it into an empty embedded or etcd store, and calicoctl datastore migrate import reads it.
Everything comes from one consistent read of the store, which is only read. Keys the format has no place for are listed on stderr. On a terminal, a progress line with counts is drawn on stderr while the store is read (unless the export itself goes to that terminal; nothing on a pipe).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> -o backup.txt',
    '<%= config.bin %> <%= command.id %> --datastore etcdv3 --etcd-endpoints http://10.0.0.1:2379 > cluster.txt',
  ]
  static override flags = {
    output: Flags.string({
      char: 'o',
      summary: 'Write to this file (0600) instead of stdout; an existing file must be an earlier export.',
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(DatastoreExport)
    const ctx = await this.ctx(flags)
    // Progress for a person at a terminal, unless the export itself is being printed there.
    const progress = flags.output !== undefined || !process.stdout.isTTY ? terminalProgress() : undefined
    const onProgress = progress && ((phase: string, done: number, total: number) => progress.update(phase, done, total))
    // Written as it is read: the text of a large store is never held whole (writeExport).
    const r = flags.output
      ? await writeExportFile(flags.output, (sink) => writeExport(ctx.store, sink, {onProgress}))
      : await writeExport(ctx.store, (chunk) => process.stdout.write(chunk), {onProgress})
    progress?.clear()
    if (r.skipped.length > 0)
      process.stderr.write(
        `Warning: ${r.skipped.length} key(s) under ${CALICO_PREFIX} have no place in the export format and were left out: ${r.skipped.slice(0, 5).join(', ')}${r.skipped.length > 5 ? ', …' : ''}\n`,
      )
    if (flags.output) {
      const c = r.counts
      this.out(
        `Exported ${c.resources} resources, ${c.blocks} blocks, ${c.affinities} block affinities, ${c.handles} handles${c.config ? ' and the IPAM configuration' : ''} to ${flags.output}\n`,
      )
    }
  }
}
