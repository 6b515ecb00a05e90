import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {installPlugins} from '../../plugins/main/manual.js'

export default class CniInstall extends BaseCommand {
  static override summary = 'Install the ipamctl-cni and ipamctl-ipam plugins into a CNI bin directory.'
  static override description =
    'Creates symlinks to this installation. With --as-calico they are named calico and calico-ipam, so existing Calico netconf files work unchanged.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --dir /opt/cni/bin',
    '<%= config.bin %> <%= command.id %> --dir /opt/cni/bin --as-calico --force',
  ]
  static override flags = {
    dir: Flags.string({summary: 'CNI bin directory.', default: '/opt/cni/bin'}),
    'as-calico': Flags.boolean({summary: 'Install as calico / calico-ipam.'}),
    force: Flags.boolean({summary: 'Replace existing files of those names.'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniInstall)
    for (const p of installPlugins(flags.dir, {asCalico: flags['as-calico'], force: flags.force}))
      this.out(`Installed ${flags.dir}/${p.name} -> ${p.target}\n`)
  }
}
