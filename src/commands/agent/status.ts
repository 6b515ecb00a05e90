import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {boxTable} from '../../cli/table.js'
import {type AgentStatus, agentStatus} from '../../lib/agent-client/status.js'
import {DEFAULT_AGENT_SOCKET} from '../../lib/agent-client/protocol.js'

export default class AgentStatusCommand extends BaseCommand {
  static override summary = "Show whether the node's IPAM agent is up, and its counters."
  static override description = 'Exit status 5, with a one-line error, when no agent answers on the socket.'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --socket /run/ipamctl/agent.sock -o json',
  ]
  static override flags = {
    socket: Flags.string({summary: "The agent's unix socket.", default: DEFAULT_AGENT_SOCKET}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(AgentStatusCommand)
    const st = await agentStatus(flags.socket)
    this.out(render(flags.output, st, () => statusTable(st)))
  }
}

function statusTable(st: AgentStatus): string {
  const c = st.counters
  const trips = Object.entries(c.datastoreRoundTrips)
    .map(([op, n]) => `${op} ${n}`)
    .join(', ')
  return boxTable(
    ['PROPERTY', 'VALUE'],
    [
      ['Agent', `up (pid ${st.pid}, version ${st.version}, up ${st.uptimeSeconds} s)`],
      ['Node', st.node],
      ['Datastore', st.datastore],
      ['Socket', st.socket],
      ['Metrics', st.metrics ?? '<off>'],
      ['Queued requests', String(st.queued)],
      [
        'Batches',
        `${c.batches} (${c.batchedRequests} auto-assign requests, ${c.blockTransactions} batched block transactions)`,
      ],
      ['Datastore round trips', trips],
      ['CAS conflicts', String(c.casConflicts)],
      ['GC', `${c.gcPasses} passes, ${c.gcReleased} addresses released, ${c.gcDeletedHandles} handles deleted`],
    ],
  )
}
