// Entry of the `ipamctl-ipam` plugin process. Deliberately small: it must not pull in oclif, chalk,
// inquirer or cli-table3, and etcd3 only arrives through openStore's lazy import when the netconf selects
// etcdv3 — a plugin is exec'd once per pod operation, so start-up time is latency (stack-and-style.md).
import fs from 'node:fs'
import {ipamPlugin} from './ipam-plugin.js'
import {type PluginIo, pluginMain, processIo} from './skel.js'

function version(): string {
  try {
    return (JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {version?: string}).version ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

export const ABOUT = `ipamctl-ipam v${version()}: Calico-compatible CNI IPAM plugin (drop-in for calico-ipam)`

/** Run one invocation and return the exit code; the store is closed before this resolves. */
export async function main(io: PluginIo = processIo()): Promise<number> {
  try {
    return await pluginMain(ipamPlugin(), io, {about: ABOUT})
  } finally {
    io.close?.()
  }
}
