// Flags shared by `cni add|del|check`.
import {Flags} from '@oclif/core'
import type {ManualRequest} from '../plugins/main/manual.js'
import type {DatastoreSettings} from '../lib/store/settings.js'

export const podFlags = {
  netns: Flags.string({required: true, summary: 'Network namespace: a name under /var/run/netns, or a path.'}),
  pod: Flags.string({
    summary: 'Kubernetes pod name (with --namespace: k8s-style handle, WorkloadEndpoint and veth name).',
  }),
  namespace: Flags.string({summary: 'Kubernetes namespace of the pod (default "default" when --pod is given).'}),
  'container-id': Flags.string({summary: 'Container ID (default: derived from the netns name, so add and del match).'}),
  ifname: Flags.string({
    summary: 'Interface name inside the namespace (at most 15 bytes).',
    description:
      'Default: eth0; with --network, the first free ethN on add, and the interface recorded for that network on del and check.',
  }),
  network: Flags.string({
    summary:
      'Attach this network (netconf name) instead of k8s-pod-network: a second interface with its own addresses.',
  }),
  conf: Flags.string({
    summary: 'CNI network config (.conf or .conflist JSON); default: ipamctl-cni with ipamctl-ipam.',
  }),
  node: Flags.string({
    summary: 'Node name (default: the netconf nodename, /var/lib/calico/nodename, or the hostname).',
  }),
}

/** The manual-plugin request the cni commands share. */
export function podRequest(
  flags: {
    netns: string
    pod?: string
    namespace?: string
    'container-id'?: string
    ifname?: string
    network?: string
    conf?: string
    node?: string
  },
  settings: DatastoreSettings,
): ManualRequest {
  return {
    netns: flags.netns,
    pod: flags.pod,
    namespace: flags.namespace,
    containerId: flags['container-id'],
    ifName: flags.ifname,
    network: flags.network,
    confFile: flags.conf,
    node: flags.node,
    settings,
    log: (line) => process.stderr.write(`${line}\n`),
  }
}
