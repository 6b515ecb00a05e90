// Entry of the `ipamctl-ipam` plugin process. Deliberately small: it must not pull in oclif, chalk,
// inquirer or cli-table3, and etcd3 only arrives through openStore's lazy import when the netconf selects
// etcdv3 — a plugin is exec'd once per pod operation, so start-up time is latency (docs/design.md#start-up-cost).
// The bins run these entries bundled (scripts/bundle-cni.mjs); BENCHMARKS.md has the numbers. An ADD or DEL that
// an agent could serve starts in the agent-first entry (agent-main.ts), which hands over here when it cannot.
import {ipamPlugin} from './plugin.js'
import {type PluginIo, pluginMain} from '../../lib/cni/skel.js'
import {ABOUT, type Handover, openPluginLog, pluginProcessIo} from './process.js'

export {ABOUT, openPluginLog, pluginProcessIo}

/**
 * Run one invocation and return the exit code; the store is closed before this resolves. `handover`: what was
 * read and asked before (stdin, read by bin/start.cjs; the agent's answer when the agent-first entry handed the
 * invocation over, used instead of asking again).
 */
export async function main(io?: PluginIo, handover?: Handover): Promise<number> {
  io ??= pluginProcessIo(handover && {data: handover.stdin, complete: true})
  try {
    return await pluginMain(ipamPlugin({agent: handover?.agent}), io, {
      about: ABOUT,
      openLog: openPluginLog('ipamctl-ipam'),
    })
  } finally {
    io.close?.()
  }
}
