import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {podFlags, podRequest} from '../../cli/cni-flags.js'
import {render} from '../../cli/render.js'
import {plainTable} from '../../cli/table.js'
import {type FamilyChoice, manualAdd} from '../../plugins/main/manual.js'
import {encodeResult} from '../../lib/cni/result.js'

export default class CniAdd extends BaseCommand {
  // No storeMode: the datastore is opened by the plugin code, with the mode of the CNI verb (src/lib/node-ipam/plugin-datastore.ts).
  static override summary = 'Wire a pod by hand: allocate addresses and create its veth, routes and endpoint record.'
  static override description =
    'Runs the same code as the ipamctl-cni plugin, in-process, against the datastore selected by the usual flags. Needs root. ' +
    'Without --conf the pod gets an address of every family that has an enabled pool (--ipv4, --ipv6 or --dual-stack choose). ' +
    'A namespace made by --create-netns is recorded as ipamctl’s: cni del removes it, and so does a failed add. ' +
    'A --conf whose IPAM is another plugin (host-local) runs it from CNI_PATH (default /opt/cni/bin:/usr/lib/cni).'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --netns demo --create-netns --pod web-0 --namespace default',
    '<%= config.bin %> <%= command.id %> --netns demo --create-netns --pod web-0 --dual-stack --mtu 1400',
    '<%= config.bin %> <%= command.id %> --netns demo --pod web-0 --network storage --conf storage.conf',
    '<%= config.bin %> <%= command.id %> --netns /var/run/netns/demo --ip 10.65.0.10 --ip fd00:65::10 -o json',
  ]
  static override flags = {
    ...podFlags,
    'create-netns': Flags.boolean({summary: 'Create the named network namespace if it does not exist.'}),
    ip: Flags.string({summary: 'Request this specific address (repeatable: one per family).', multiple: true}),
    mtu: Flags.integer({summary: 'MTU of the pod interface and its host end (68-65535; IPv6 needs 1280).'}),
    ipv4: Flags.boolean({summary: 'IPv4 only.', exclusive: ['ipv6', 'dual-stack']}),
    ipv6: Flags.boolean({summary: 'IPv6 only.', exclusive: ['ipv4', 'dual-stack']}),
    'dual-stack': Flags.boolean({summary: 'One IPv4 and one IPv6 address.', exclusive: ['ipv4', 'ipv6']}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniAdd)
    const families: FamilyChoice | undefined = flags['dual-stack']
      ? 'dual'
      : flags.ipv6
        ? 'ipv6'
        : flags.ipv4
          ? 'ipv4'
          : undefined
    const {containerId, result, createdNetns} = await manualAdd({
      ...podRequest(flags, this.settings(flags)),
      createNetns: flags['create-netns'],
      ips: flags.ip,
      mtu: flags.mtu,
      families,
    })
    const table = () =>
      `${plainTable(
        ['INTERFACE', 'MAC', 'ADDRESS', 'SANDBOX'],
        (result.interfaces ?? []).map((i, idx) => [
          i.name,
          i.mac ?? '',
          result.ips
            .filter((ip) => ip.interface === idx)
            .map((ip) => ip.address)
            .join(','),
          i.sandbox ?? '(host)',
        ]),
      )}container ID: ${containerId}\n${createdNetns ? `created netns ${flags.netns} (cni del removes it)\n` : ''}`
    this.out(render(flags.output, encodeResult(result, '1.0.0'), table))
  }
}
