// An `ipamctl-ipam` ADD or DEL as the agent-first entry does it (docs/startup.md#the-agent-first-entry): through the
// node's agent only, with every line it would print or log held until the invocation is finished here, and handed
// over as plain data (its stdin and the agent's answer) where the full plugin would go on to the datastore. Two
// callers run it: the plugin process's agent-first entry (src/plugins/ipam/agent-main.ts), and the agent itself,
// which runs a whole invocation for a plugin process that forwarded it (`/v1/invoke`, src/lib/agent/server.ts;
// docs/startup.md#the-agent-runs-the-invocation). Kept free of the datastore and the IPAM core: the agent-first
// bundle is made from it.
import {type AgentCall, agentCall, type AgentOutcome} from '../agent-client/client.js'
import {type PluginFuncs, type PluginInfo, type PluginIo, pluginMain} from '../cni/skel.js'
import {cniLogger} from '../log/cni.js'
import {packageVersion} from '../package-root.js'
import {type AgentReplay, addViaAgent, delViaAgent, ipamInvocation} from './agent-path.js'

/** Compiled in by scripts/bundle-cni.mjs; the plain tsc output (and the CLI bundle) reads package.json instead. */
declare const __IPAMCTL_VERSION__: string | undefined

const version = (): string => (typeof __IPAMCTL_VERSION__ === 'string' ? __IPAMCTL_VERSION__ : packageVersion())

export const ABOUT = `ipamctl-ipam v${version()}: Calico-compatible CNI IPAM plugin (drop-in for calico-ipam)`

/**
 * The plugins' log: stderr and the netconf's log_file_path (src/lib/log/cni.ts); `held`: see cniLogger. The
 * environment and pid are the io's when it carries a plugin process's (the agent running an invocation for it).
 */
export const openPluginLog =
  (plugin: string, held = false) =>
  (config: Record<string, unknown>, io: PluginIo): ReturnType<typeof cniLogger> =>
    cniLogger({
      config,
      getenv: (n) => io.getenv(n),
      plugin,
      stderr: {write: (line) => void io.stderr.write(line)},
      held,
      env: io.env,
      pid: io.pid,
    })

/**
 * An invocation the agent-first entry hands over to the full plugin, as plain data (the two are separate
 * bundles): all of stdin, and when the agent was asked, its socket and answer. Nothing it did is visible yet.
 */
export interface Handover {
  stdin: Buffer
  agent?: AgentReplay
}

/** Thrown to end the invocation here once it is handed over (its error output is dropped with the rest). */
class HandedOver extends Error {}

/** What was written to stdout (1) and stderr (2), in order. */
export type HeldOutput = [1 | 2, string][]

/** `io` with stdout and stderr held until commit(), and stdin kept for a handover. */
export function heldIo(io: PluginIo): PluginIo & {stdin(): Buffer | undefined; commit(): void} {
  const out: HeldOutput = []
  let stdin: Buffer | undefined
  return {
    getenv: (n) => io.getenv(n),
    env: io.env,
    pid: io.pid,
    async readStdin() {
      const data = await io.readStdin()
      stdin = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
      return stdin
    },
    stdout: {write: (chunk: string) => out.push([1, chunk])},
    stderr: {write: (chunk: string) => out.push([2, chunk])},
    stdin: () => stdin,
    commit() {
      for (const [fd, chunk] of out.splice(0)) (fd === 1 ? io.stdout : io.stderr).write(chunk)
    },
  }
}

export interface AgentFirstOptions {
  /** The process has nothing else to do while it waits for the agent (agentRequest's option). */
  blocking?: boolean
  /** How the agent is asked: over its socket, or (in the agent itself) in its own process. */
  call?: AgentCall
}

/**
 * ADD and DEL through the agent only; `handOver` is called (and ends the invocation) where the full plugin
 * would go on to the datastore, with the agent's answer when it was asked.
 */
export function agentFirstPlugin(
  handOver: (agent?: {socket: string; outcome: AgentOutcome}) => never,
  {blocking = false, call = agentCall}: AgentFirstOptions = {},
): PluginFuncs {
  const asked = (socket: string) => {
    let outcome: AgentOutcome | undefined
    const recorded: AgentCall = async (s, op, payload, opts) =>
      (outcome = await call(s, op, payload, {...opts, blocking}))
    return {call: recorded, handOver: () => handOver(outcome && {socket, outcome})}
  }
  return {
    async add(a) {
      const {req, settings, socket} = await ipamInvocation(a)
      if (!socket) return handOver()
      req.logger.addSecret(settings.etcdPassword)
      const agent = asked(socket)
      const via = await addViaAgent(socket, req, settings, new Date(), agent.call)
      return typeof via === 'object' ? via : agent.handOver()
    },
    async del(a) {
      const {req, settings, socket} = await ipamInvocation(a)
      if (!socket) return handOver()
      req.logger.addSecret(settings.etcdPassword)
      const agent = asked(socket)
      if (!(await delViaAgent(socket, req, settings, agent.call))) agent.handOver()
    },
    check: () => handOver(),
    status: () => handOver(),
    gc: () => handOver(),
  }
}

/**
 * Run one invocation on `io` through the agent: its exit code once its output is written to `io` and its log
 * lines to the log file (`commit`, default true: false drops them, for a caller whose plugin process has gone), or
 * what the full plugin needs to do it instead, in which case nothing was written.
 */
export async function runAgentFirst(
  io: PluginIo,
  opts: AgentFirstOptions & {commit?: () => boolean} = {},
): Promise<number | Handover> {
  const held = heldIo(io)
  let handover: Handover | undefined
  let log: ReturnType<typeof cniLogger> | undefined
  const info: PluginInfo = {
    about: ABOUT,
    // The file's lines are held too; they are written (or dropped) and the file closed below.
    openLog: (config, lio) => {
      log = openPluginLog('ipamctl-ipam', true)(config, lio)
      return {logger: log.logger, close() {}}
    },
  }
  const plugin = agentFirstPlugin((agent) => {
    handover = {stdin: held.stdin() ?? Buffer.alloc(0), agent}
    throw new HandedOver('handed over to the full plugin')
  }, opts)
  try {
    const code = await pluginMain(plugin, held, info)
    if (handover) return handover
    if (opts.commit?.() ?? true) {
      log?.commit()
      held.commit()
    }
    return code
  } finally {
    log?.close()
  }
}
