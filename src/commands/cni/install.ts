import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {DEFAULT_PREFIX, install, rollback} from '../../lib/install/install.js'
import {packageRoot, packageVersion} from '../../lib/package-root.js'

export default class CniInstall extends BaseCommand {
  static override summary = 'Install the ipamctl-cni and ipamctl-ipam plugins into a CNI bin directory.'
  static override description = [
    'Copies a self-contained plugin runtime (the plugin bundles and code caches, the native addons and this node binary) into <prefix>/<version>-<build id>, makes it current by an atomic rename of <prefix>/current, and links the plugins in the CNI bin directory to <prefix>/current. The installed plugins do not use this installation afterwards: it can be moved, upgraded or removed.',
    "Installing another build puts it beside the old one and switches atomically: a plugin exec runs the old or the new runtime, never a mix. The current and the previous runtime are kept; --rollback makes the previous one current again. With --as-calico the entries are named calico and calico-ipam, so existing Calico netconf files work unchanged. An entry of those names that is not ipamctl's link is replaced only with --force. ipamctl cni uninstall removes what install wrote.",
  ].join('\n\n')
  static override examples = [
    '<%= config.bin %> <%= command.id %> --dir /opt/cni/bin',
    '<%= config.bin %> <%= command.id %> --dir /opt/cni/bin --as-calico --force',
    '<%= config.bin %> <%= command.id %> --rollback',
  ]
  static override flags = {
    dir: Flags.string({summary: 'CNI bin directory.', default: '/opt/cni/bin'}),
    prefix: Flags.string({summary: 'Where the plugin runtimes are kept.', default: DEFAULT_PREFIX}),
    'as-calico': Flags.boolean({summary: 'Install as calico / calico-ipam.'}),
    force: Flags.boolean({summary: 'Replace existing files of those names that are not ipamctl links.'}),
    rollback: Flags.boolean({summary: 'Make the previously installed runtime current again (copies nothing).'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniInstall)
    if (flags.rollback) {
      const r = rollback(flags.prefix)
      this.out(`Rolled back ${flags.prefix}/current: ${r.from} -> ${r.to}\n`)
      return
    }
    const r = install({
      source: packageRoot(),
      version: packageVersion(),
      prefix: flags.prefix,
      dir: flags.dir,
      asCalico: flags['as-calico'],
      force: flags.force,
      node: process.execPath,
    })
    this.out(
      `${r.reused ? 'Using' : 'Installed'} ${flags.prefix}/${r.version}${r.previous ? ` (was ${r.previous})` : ''}; current -> ${r.version}\n`,
    )
    for (const e of r.entries) this.out(`${e.written ? 'Linked' : 'Kept'} ${e.path} -> ${e.target}\n`)
  }
}
