import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {startAgent} from '../../lib/agent/agent.js'
import {DEFAULT_AGENT_SOCKET, DEFAULT_METRICS_ADDRESS} from '../../lib/agent-client/protocol.js'
import {parseDuration} from '../../lib/ipam/gc.js'
import {packageVersion} from '../../lib/package-root.js'
import {createLogger, LEVELS, parseLevel} from '../../lib/log/logger.js'
import {ValidationError} from '../../lib/errors.js'

export default class AgentRun extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary =
    'Run the per-node IPAM agent: the CNI plugins allocate through it, batched, and it exports Prometheus metrics.'
  static override description = [
    "One agent per node holds the datastore connection and is the node's only IPAM writer: the ipamctl-ipam plugin sends ADD and DEL to it over a unix socket instead of opening the datastore itself (and falls back to the datastore when no agent answers). A plugin process of the agent's own user, in its mount and UTS namespaces and working directory (as the kernel reports the connecting process), hands the agent the whole invocation: the agent parses the netconf, logs to the netconf's log file as the plugin would, and returns what the plugin prints; any other plugin process does the invocation itself and asks only for the addresses. Concurrent auto-assign requests are served in batches, one block transaction for many pods.",
    'The socket is created with mode 0660; a socket left by a dead agent is replaced, a live agent\'s is not (exit 4). The agent logs to stderr (--log-format text or json, --log-level): one "ready on <socket>" line when it serves, each assignment and release at info, each batch at debug, and on SIGTERM or SIGINT answers the requests in flight, closes the datastore, removes the socket and exits 0.',
    'Metrics are served on --metrics-address (loopback by default; "" turns the listener off; GET /metrics on the socket works either way). --gc-interval runs ipam gc\'s logic in the background: it releases only workload allocations (as ipam gc), and an address only after two consecutive passes found it leaked, older than --gc-grace, with the same handle and sequence number.',
  ].join('\n\n')
  static override examples = [
    '<%= config.bin %> <%= command.id %> --node $(hostname)',
    '<%= config.bin %> <%= command.id %> --node node-1 --datastore etcdv3 --etcd-endpoints http://10.0.0.1:2379 --gc-interval 5m --gc-grace 10m',
  ]
  static override flags = {
    node: Flags.string({summary: "The node this agent serves (the plugins' node name).", required: true}),
    socket: Flags.string({summary: 'Unix socket to serve on.', default: DEFAULT_AGENT_SOCKET}),
    'metrics-address': Flags.string({
      summary: 'HOST:PORT for Prometheus metrics ("" for none).',
      default: DEFAULT_METRICS_ADDRESS,
    }),
    'gc-interval': Flags.string({summary: 'Run a background GC pass this often (Go duration; 0 = off).', default: '0'}),
    'gc-grace': Flags.string({
      summary: 'Leaked addresses younger than this are left alone (Go duration).',
      default: '10m',
    }),
    'log-format': Flags.string({
      summary: 'Log lines as text or as one JSON object per line (docs/logging.md).',
      options: ['text', 'json'],
      default: 'text',
    }),
    'log-level': Flags.string({
      summary: 'Least severe level logged: error, warning, info or debug (batches are debug; GC decisions info).',
      default: 'info',
    }),
    'leak-scan-interval': Flags.string({
      summary:
        'While /metrics is scraped, recompute its leak figures (an ipam check scan) this often (Go duration; 0 = never).',
      default: '1m',
    }),
    'batch-window': Flags.string({
      summary: 'Wait this long for more requests before each batch (Go duration).',
      default: '0',
      hidden: true,
    }),
    'test-hold-replies': Flags.string({
      summary: "Test hook: hold each batch's replies this long after its commit.",
      default: '0',
      hidden: true,
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(AgentRun)
    const level = parseLevel(flags['log-level'])
    if (!level) throw new ValidationError(`--log-level ${flags['log-level']}: use one of ${LEVELS.join(', ')}`)
    const logger = createLogger({
      level,
      format: flags['log-format'] as 'text' | 'json',
      component: 'agent',
      context: {node: flags.node},
      sinks: [{write: (line) => void process.stderr.write(line)}],
    })
    const log = (line: string) => logger.info(line)
    const agent = await startAgent({
      node: flags.node,
      settings: this.settings(flags),
      socket: flags.socket,
      metricsAddress: flags['metrics-address'],
      gcIntervalMs: parseDuration(flags['gc-interval']),
      gcGraceMs: parseDuration(flags['gc-grace']),
      leakScanIntervalMs: parseDuration(flags['leak-scan-interval']),
      batchWindowMs: parseDuration(flags['batch-window']),
      holdRepliesMs: parseDuration(flags['test-hold-replies']),
      version: packageVersion(),
      log,
      logger,
    })
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'))
      process.once('SIGINT', () => resolve('SIGINT'))
    })
    log(`${signal}: finishing requests in flight`)
    await agent.stop()
    log('stopped')
  }
}
