import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {DEFAULT_PREFIX, uninstall} from '../../lib/install/install.js'

export default class CniUninstall extends BaseCommand {
  static override summary = 'Remove what ipamctl cni install wrote: plugin entries, runtimes and the manifest.'
  static override description =
    'Reads <prefix>/ipamctl-install.json, the list of what install wrote, and removes exactly that: the plugin links (only while they are still the links install made: anything else at those names stops uninstall before it removes anything), the runtimes, <prefix>/current, the manifest, and the directories install created once they are empty. With --dir, only the plugin entries in that directory; the runtime stays while other entries use it.'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --dir /opt/cni/bin --prefix /opt/ipamctl',
  ]
  static override flags = {
    dir: Flags.string({summary: 'Only the plugin entries in this CNI bin directory.'}),
    prefix: Flags.string({summary: 'Where the plugin runtimes are kept.', default: DEFAULT_PREFIX}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniUninstall)
    const r = uninstall(flags.prefix, flags.dir)
    for (const p of r.removed) this.out(`Removed ${p}\n`)
    if (r.kept.length > 0) this.out(`Kept the runtime for ${r.kept.join(', ')}\n`)
  }
}
