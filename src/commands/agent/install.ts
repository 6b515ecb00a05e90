import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {DEFAULT_AGENT_SOCKET} from '../../lib/agent-client/protocol.js'
import {DEFAULT_UNIT_DIR, renderAgentUnit, writeAgentUnit} from '../../lib/install/agent-unit.js'
import {localNodename} from '../../lib/node-ipam/nodename.js'
import {packageRoot} from '../../lib/package-root.js'

export default class AgentInstall extends BaseCommand {
  static override summary = 'Write the systemd unit that runs the per-node agent (ipamctl-agent.service).'
  static override description = [
    'The unit runs this ipamctl (its node binary and package) as `agent run` with the node name, socket and datastore settings this command resolves from its flags, environment and config file. Settings from a config file are passed as --config, so the file stays the one place for them; etcd credentials given by environment are refused rather than written into the unit.',
    'The same unit already there is left alone; a different file of that name is replaced only with --force (exit 4 without). Then: systemctl daemon-reload && systemctl enable --now ipamctl-agent.',
  ].join('\n\n')
  static override examples = [
    '<%= config.bin %> <%= command.id %> --dry-run',
    '<%= config.bin %> <%= command.id %> --node node-1 --config /etc/ipamctl/ipamctl.cfg',
  ]
  static override flags = {
    node: Flags.string({summary: "The node the agent serves (default: the plugins' node name for this host)."}),
    socket: Flags.string({summary: 'Unix socket the agent serves on.', default: DEFAULT_AGENT_SOCKET}),
    'unit-dir': Flags.string({summary: 'systemd unit directory.', default: DEFAULT_UNIT_DIR}),
    force: Flags.boolean({summary: 'Replace a different unit file of that name.'}),
    'dry-run': Flags.boolean({summary: 'Print the unit instead of writing it.'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(AgentInstall)
    const text = renderAgentUnit({
      node: flags.node ?? localNodename(),
      socket: flags.socket,
      settings: this.settings(flags),
      ipamctl: [process.execPath, `${packageRoot()}/bin/run.cjs`],
    })
    if (flags['dry-run']) {
      this.out(text)
      return
    }
    const r = writeAgentUnit(flags['unit-dir'], text, flags.force)
    this.out(
      r.action === 'unchanged'
        ? `${r.path} is up to date\n`
        : `${r.action === 'written' ? 'Wrote' : 'Replaced'} ${r.path}; run: systemctl daemon-reload && systemctl enable --now ipamctl-agent\n`,
    )
  }
}
