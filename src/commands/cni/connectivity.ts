import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {plainTable} from '../../cli/table.js'
import {ConnectivityError, ValidationError} from '../../lib/errors.js'
import {hostAddresses, type Party, type Probe, probeConnectivity} from '../../lib/dataplane/connectivity.js'
import {podParties} from '../../lib/node-ipam/endpoint-check.js'
import {localNodename} from '../../lib/node-ipam/nodename.js'
import {tryParseIp} from '../../lib/net/cidr.js'
import {listWorkloadEndpoints} from '../../lib/workload/endpoint.js'

export default class CniConnectivity extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary =
    'Check that the wired pods of this host and the host reach each other, for every address family.'
  static override description =
    'For each ordered pair of parties (the pods of this node, as their endpoint records list them, and the host), one TCP ' +
    'exchange from inside the first one’s network namespace to each address of the second of a family the first has. ' +
    'Traffic goes only to pod addresses and this host’s own addresses, so none leaves the host. The host’s address is, ' +
    'per family, the first global address on an interface that is up and is not loopback or a pod’s host end ' +
    '(--host-address chooses). Prints a matrix (FROM down, TO across); the exit status is 0 only if every pair answers, ' +
    'else 7. Needs root.'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --pods web-0,web-1 --no-host',
    '<%= config.bin %> <%= command.id %> --host-address 192.0.2.2 --host-address fd00::2 -o json',
  ]
  static override flags = {
    pods: Flags.string({
      summary: 'Only these pods: names, namespace/name, container IDs or netns names, comma-separated.',
    }),
    node: Flags.string({summary: 'The node whose endpoint records to take (default: this host’s node name).'}),
    'host-address': Flags.string({
      summary: 'Probe the host at this address (repeatable, one per family).',
      multiple: true,
    }),
    'no-host': Flags.boolean({summary: 'Leave the host out: pod to pod only.'}),
    timeout: Flags.integer({summary: 'Milliseconds each exchange may take.', default: 2000, min: 100, max: 60000}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniConnectivity)
    const ctx = await this.ctx(flags)
    const weps = (await listWorkloadEndpoints(ctx.store, flags.node ?? localNodename())).map(({kv: _kv, ...w}) => w)
    let pods = podParties(weps)
    if (flags.pods !== undefined) {
      const want = flags.pods
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
      const unknown = want.filter((n) => !pods.some((p) => p.names.includes(n)))
      if (unknown.length > 0)
        throw new ValidationError(
          `--pods: no wired pod on this node is called ${unknown.map((n) => JSON.stringify(n)).join(', ')}`,
        )
      pods = pods.filter((p) => p.names.some((n) => want.includes(n)))
    }
    const hostAddrs = flags['no-host'] ? [] : (flags['host-address'] ?? (await hostAddresses()))
    for (const a of hostAddrs)
      if (!tryParseIp(a)) throw new ValidationError(`--host-address: ${JSON.stringify(a)} is not an IP address`)
    const parties: Party[] = [...(flags['no-host'] ? [] : [{name: 'host', addresses: hostAddrs}]), ...pods]
    if (parties.length < 2) throw new ValidationError('nothing to probe: fewer than two parties (pods and the host)')
    const probes = await probeConnectivity(parties, {timeoutMs: flags.timeout})
    const failed = probes.filter((p) => !p.ok)
    this.out(render(flags.output, probes, () => matrix(parties, probes)))
    if (failed.length > 0)
      throw new ConnectivityError(
        `${failed.length} of ${probes.length} exchanges got no answer; first: ${failed[0]!.from} -> ${failed[0]!.to} ${failed[0]!.address} (${failed[0]!.error})`,
      )
  }
}

/** FROM down, TO across; a cell is `ok v4 v6`, or the addresses that did not answer. */
function matrix(parties: readonly Party[], probes: readonly Probe[]): string {
  const names = parties.map((p) => p.name)
  const rows = names.map((from) => [
    from,
    ...names.map((to) => {
      if (from === to) return '-'
      const cell = probes.filter((p) => p.from === from && p.to === to)
      if (cell.length === 0) return 'n/a'
      const bad = cell.filter((p) => !p.ok)
      if (bad.length === 0) return `ok ${[...new Set(cell.map((p) => `v${p.family}`))].join(' ')}`
      return `FAIL ${bad.map((p) => `${p.address} (${p.error})`).join(' ')}`
    }),
  ])
  return plainTable(['FROM \\ TO', ...names], rows)
}
