import {Flags} from '@oclif/core'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {parseKeyValues} from '../../lib/args.js'
import {ExhaustedError, ValidationError} from '../../lib/errors.js'
import {assignIps} from '../../lib/ipam/assign-ip.js'
import {autoAssign, refuseReservedAttributes, shortfall} from '../../lib/ipam/autoassign.js'
import {parseNamespaceLabels} from '../../lib/ipam/pools-select.js'
import {goTimeString} from '../../lib/codec/gotime.js'

export default class IpamAssign extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = 'Assign addresses to a host: automatically from its blocks, or specific ones with --ip.'
  static override description =
    `Automatic assignment uses the host's affine blocks first, then claims a new block, then (unless strict affinity is on) borrows from other blocks.
Prints one address per line. If fewer addresses than requested could be assigned, the assigned ones are printed and kept, the reason goes to stderr, and the exit status is 6.
--ip assigns exactly the given addresses, all or none.
A pool with a namespaceSelector serves only requests whose --namespace-labels it matches (no labels: the empty set); pools given with --pool are used whatever their selectors.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --host node-1 --count 2 --handle pod-a',
    '<%= config.bin %> <%= command.id %> --host node-1 --count 1 --count6 1 --pool default-ipv4 --pool default-ipv6',
    '<%= config.bin %> <%= command.id %> --host node-1 --ip 10.65.0.10 --handle gateway',
    '<%= config.bin %> <%= command.id %> --host node-1 --handle pod-b --namespace-labels team=a,env=prod',
  ]
  static override flags = {
    host: Flags.string({
      required: true,
      summary: 'Host (node) the addresses are for; its Node record is created if missing.',
    }),
    count: Flags.integer({summary: 'Number of IPv4 addresses (default 1 unless --count6 or --ip is given).', min: 0}),
    count6: Flags.integer({summary: 'Number of IPv6 addresses.', min: 0, default: 0}),
    ip: Flags.string({
      multiple: true,
      summary: 'Assign this specific address (repeatable).',
      exclusive: ['count', 'count6', 'pool'],
    }),
    pool: Flags.string({multiple: true, summary: 'Use only these pools (name or CIDR, repeatable), in this order.'}),
    'namespace-labels': Flags.string({
      summary:
        'Labels of the namespace the addresses are for, KEY=VALUE[,KEY=VALUE...]: pools with a namespaceSelector serve only matching labels.',
      exclusive: ['ip'],
    }),
    handle: Flags.string({summary: 'Handle ID recording who owns the addresses (release them later with --handle).'}),
    attr: Flags.string({
      multiple: true,
      summary:
        'Extra owner attribute KEY=VALUE (repeatable); node, timestamp, pod, namespace and ipamctl.io/netns are set by ipamctl and refused.',
    }),
    output: outputFlag,
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamAssign)
    const given = parseKeyValues(flags.attr, 'attribute')
    refuseReservedAttributes(given)
    const attrs = {...given, timestamp: goTimeString(new Date())}
    const namespaceLabels =
      flags['namespace-labels'] === undefined ? undefined : parseNamespaceLabels(flags['namespace-labels'])
    const ctx = await this.ctx(flags)
    const common = {host: flags.host, handle: flags.handle, attrs}
    if (flags.ip) {
      const ips = await assignIps(ctx, flags.ip, common)
      this.out(
        render(flags.output, {handle: flags.handle ?? null, ips}, () => ips.map((i) => `${i.address}\n`).join('')),
      )
      return
    }
    const num4 = flags.count ?? (flags.count6 > 0 ? 0 : 1)
    if (num4 + flags.count6 === 0)
      throw new ValidationError('nothing to assign: give --count and/or --count6 greater than 0')
    const r = await autoAssign(ctx, {...common, num4, num6: flags.count6, pools: flags.pool, namespaceLabels})
    const ips = [...r.v4.ips, ...r.v6.ips]
    this.out(
      render(
        flags.output,
        {handle: flags.handle ?? null, ips, complete: !shortfall(r.v4, 4) && !shortfall(r.v6, 6)},
        () => ips.map((i) => `${i.address}\n`).join(''),
      ),
    )
    const short = [shortfall(r.v4, 4), shortfall(r.v6, 6)].filter(Boolean)
    if (short.length > 0) throw new ExhaustedError(short.join('; '))
  }
}
