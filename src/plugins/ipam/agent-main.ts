// The agent-first entry of the `ipamctl-ipam` process: every ADD and DEL starts here (bin/start.cjs). It does
// the invocation exactly as the full plugin (main.ts) would when the node's agent serves it, with the same
// functions (skel, netconf, log, src/lib/node-ipam/agent-path.ts), but is bundled without the datastore and the
// IPAM core, so a process that only talks to the agent loads a fraction of the code
// (docs/startup.md#the-agent-first-entry). Whenever the datastore itself would be needed (no agent socket, the
// agent unreachable, silent or not serving this request) it hands the invocation over to the full plugin,
// which does it again from the start: until then nothing it did is visible (stdout, stderr and log file lines
// are held), and the agent's answer is handed over with stdin so that the agent is not asked twice.
import {type AgentCall, agentCall, type AgentOutcome} from '../../lib/agent-client/client.js'
import {type PluginFuncs, type PluginInfo, type PluginIo, pluginMain} from '../../lib/cni/skel.js'
import type {cniLogger} from '../../lib/log/cni.js'
import {addViaAgent, delViaAgent, ipamInvocation} from '../../lib/node-ipam/agent-path.js'
import {DEFAULT_AGENT_SOCKET} from '../../lib/agent-client/protocol.js'
import {AGENT_SOCKET_KEY} from '../../lib/node-ipam/netconf.js'
import {ABOUT, type Handover, openPluginLog, pluginProcessIo, type ReadStdin} from './process.js'

/**
 * When bin/start.cjs starts this entry (its `FIRST`, kept equal to this by test/plugins/ipam/agent-main.test.ts):
 * for these commands, when stdin could name an agent socket or the default one exists. Otherwise no agent can
 * serve the invocation, and loading this entry first would only add to the full plugin's start.
 */
export const AGENT_FIRST = {commands: ['ADD', 'DEL'], netconfKey: AGENT_SOCKET_KEY, defaultSocket: DEFAULT_AGENT_SOCKET}

/** Thrown to end the invocation here once it is handed over (its error output is dropped with the rest). */
class HandedOver extends Error {}

/** `io` with stdout and stderr held until commit(), and stdin kept for a handover. */
export function heldIo(io: PluginIo): PluginIo & {stdin(): Buffer | undefined; commit(): void} {
  const out: [1 | 2, string][] = []
  let stdin: Buffer | undefined
  return {
    getenv: (n) => io.getenv(n),
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

/**
 * ADD and DEL through the agent only; `handOver` is called (and ends the invocation) where the full plugin
 * would go on to the datastore, with the agent's answer when it was asked. `blocking`: the process has nothing
 * else to do while it waits for the agent (agentRequest's option).
 */
export function agentFirstPlugin(
  handOver: (agent?: {socket: string; outcome: AgentOutcome}) => never,
  {blocking = false}: {blocking?: boolean} = {},
): PluginFuncs {
  const asked = (socket: string) => {
    let outcome: AgentOutcome | undefined
    const call: AgentCall = async (s, op, payload, opts) =>
      (outcome = await agentCall(s, op, payload, {...opts, blocking}))
    return {call, handOver: () => handOver(outcome && {socket, outcome})}
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
 * Run one invocation: its exit code, or what the full plugin needs to do it instead (main.ts `main`), in
 * which case this one wrote nothing.
 */
export async function main(io?: PluginIo, stdin?: ReadStdin): Promise<number | Handover> {
  // Without an io this is the plugin process itself (bin/start.cjs), which only waits for the agent's reply.
  const blocking = io === undefined
  io ??= pluginProcessIo(stdin)
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
  const plugin = agentFirstPlugin(
    (agent) => {
      handover = {stdin: held.stdin() ?? Buffer.alloc(0), agent}
      throw new HandedOver('handed over to the full plugin')
    },
    {blocking},
  )
  try {
    const code = await pluginMain(plugin, held, info)
    if (handover) return handover
    log?.commit()
    held.commit()
    return code
  } finally {
    log?.close()
    if (!handover) io?.close?.()
  }
}
