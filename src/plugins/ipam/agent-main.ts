// The agent-first entry of the `ipamctl-ipam` process: every ADD and DEL starts here (bin/start.cjs). It does
// the invocation exactly as the full plugin (main.ts) would when the node's agent serves it, with the same
// functions (skel, netconf, log, src/lib/node-ipam/agent-path.ts), but is bundled without the datastore and the
// IPAM core, so a process that only talks to the agent loads a fraction of the code
// (docs/startup.md#the-agent-first-entry). Whenever the datastore itself would be needed (no agent socket, the
// agent unreachable, silent or not serving this request) it hands the invocation over to the full plugin,
// which does it again from the start: until then nothing it did is visible (stdout, stderr and log file lines
// are held), and the agent's answer is handed over with stdin so that the agent is not asked twice.
import {DEFAULT_AGENT_SOCKET} from '../../lib/agent-client/protocol.js'
import type {PluginIo} from '../../lib/cni/skel.js'
import {type Handover, runAgentFirst} from '../../lib/node-ipam/agent-first.js'
import {AGENT_SOCKET_KEY} from '../../lib/node-ipam/netconf.js'
import {pluginProcessIo, type ReadStdin} from './process.js'

/**
 * When bin/start.cjs starts this entry (its `FIRST`, kept equal to this by test/plugins/ipam/agent-main.test.ts):
 * for these commands, when stdin could name an agent socket or the default one exists. Otherwise no agent can
 * serve the invocation, and loading this entry first would only add to the full plugin's start.
 */
export const AGENT_FIRST = {commands: ['ADD', 'DEL'], netconfKey: AGENT_SOCKET_KEY, defaultSocket: DEFAULT_AGENT_SOCKET}

/**
 * Run one invocation (src/lib/node-ipam/agent-first.ts): its exit code, or what the full plugin needs to do it
 * instead (main.ts `main`), in which case this one wrote nothing.
 */
export async function main(io?: PluginIo, stdin?: ReadStdin): Promise<number | Handover> {
  // Without an io this is the plugin process itself (bin/start.cjs), which only waits for the agent's reply.
  const blocking = io === undefined
  io ??= pluginProcessIo(stdin)
  let r: number | Handover | undefined
  try {
    r = await runAgentFirst(io, {blocking})
    return r
  } finally {
    // A handover leaves stdin to the full plugin.
    if (typeof r !== 'object') io.close?.()
  }
}
