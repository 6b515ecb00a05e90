// Entry of the `ipamctl-cni` plugin process (installed as `calico` with --as-calico). Like src/plugins/ipam/main.ts it
// must stay light: no oclif/chalk/inquirer/cli-table3, etcd3 only when the netconf selects etcdv3.
import {mainPlugin} from './plugin.js'
import {ABOUT as IPAM_ABOUT, openPluginLog, pluginProcessIo} from '../ipam/process.js'
import {type PluginIo, pluginMain} from '../../lib/cni/skel.js'

export const ABOUT = IPAM_ABOUT.replace('ipamctl-ipam', 'ipamctl-cni').replace(
  'CNI IPAM plugin (drop-in for calico-ipam)',
  'CNI plugin (drop-in for calico)',
)

export async function main(io: PluginIo = pluginProcessIo()): Promise<number> {
  try {
    return await pluginMain(mainPlugin(), io, {about: ABOUT, openLog: openPluginLog('ipamctl-cni')})
  } finally {
    io.close?.()
  }
}
