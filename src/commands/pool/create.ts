import {Args, Flags} from '@oclif/core'
import {parseKeyValues} from '../../lib/args.js'
import {ValidationError} from '../../lib/errors.js'
import {readTextFile} from '../../lib/files.js'
import {parsePoolManifest} from '../../lib/ipam/manifest.js'
import {ALLOWED_USES, ASSIGNMENT_MODES, ENCAP_MODES, type AllowedUse, type PoolInput} from '../../lib/ipam/pool.js'
import {createPools} from '../../lib/ipam/pool-admin.js'
import {poolCapacityWarnings} from '../../lib/ipam/capacity-use.js'
import {BaseCommand} from '../../cli/base.js'

export default class PoolCreate extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = 'Create an IP pool from flags, or several from a Calico IPPool manifest.'
  static override description =
    `The CIDR must be strictly masked and must not overlap another pool or the link-local range.
Block size defaults to 26 for IPv4 and 122 for IPv6. With -f, every document is validated before any pool is written, and all pools are created in one transaction.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> default-ipv4 --cidr 10.65.0.0/16',
    '<%= config.bin %> <%= command.id %> rack-a --cidr 10.66.0.0/20 --block-size 28 --node-selector \'rack == "a"\'',
    '<%= config.bin %> <%= command.id %> -f ippools.yaml',
  ]
  // ignoreStdin: otherwise oclif reads a manifest piped to `-f -` into NAME.
  static override args = {
    name: Args.string({description: 'Pool name (lower-case letters, digits, "-" and ".").', ignoreStdin: true}),
  }
  static override flags = {
    file: Flags.string({
      char: 'f',
      summary: 'Calico IPPool manifest (YAML or JSON, several documents allowed); "-" reads stdin.',
      exclusive: ['cidr'],
    }),
    cidr: Flags.string({summary: 'Pool CIDR, e.g. 10.65.0.0/16 or fd80:24e2:f998:72d6::/64.'}),
    'block-size': Flags.integer({summary: "Prefix length of the pool's blocks (IPv4 20-32, IPv6 116-128)."}),
    disabled: Flags.boolean({summary: 'Create the pool disabled (no new allocations).'}),
    'node-selector': Flags.string({summary: 'Calico selector choosing the nodes that use this pool (default all()).'}),
    'nat-outgoing': Flags.boolean({summary: 'Masquerade traffic leaving the pool.'}),
    'ipip-mode': Flags.string({options: [...ENCAP_MODES], summary: 'IP-in-IP encapsulation.'}),
    'vxlan-mode': Flags.string({options: [...ENCAP_MODES], summary: 'VXLAN encapsulation.'}),
    'allowed-uses': Flags.string({
      multiple: true,
      delimiter: ',',
      options: [...ALLOWED_USES],
      summary: 'What addresses may be used for (default Workload,Tunnel).',
    }),
    'assignment-mode': Flags.string({
      options: [...ASSIGNMENT_MODES],
      summary: 'Automatic pools are chosen by selector; Manual ones only when requested.',
    }),
    'disable-bgp-export': Flags.boolean({summary: 'Do not export the pool over BGP.'}),
    label: Flags.string({multiple: true, summary: 'Pool label KEY=VALUE (repeatable).'}),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PoolCreate)
    let inputs: PoolInput[]
    if (flags.file) {
      if (args.name) throw new ValidationError('give either a pool NAME with --cidr, or -f FILE, not both')
      const text = readTextFile(flags.file, 'manifest')
      inputs = parsePoolManifest(text, flags.file)
    } else {
      if (!args.name || !flags.cidr) throw new ValidationError('give a pool NAME and --cidr, or -f FILE')
      inputs = [
        {
          name: args.name,
          cidr: flags.cidr,
          blockSize: flags['block-size'],
          disabled: flags.disabled,
          nodeSelector: flags['node-selector'],
          natOutgoing: flags['nat-outgoing'],
          ipipMode: flags['ipip-mode'] as PoolInput['ipipMode'],
          vxlanMode: flags['vxlan-mode'] as PoolInput['vxlanMode'],
          allowedUses: flags['allowed-uses'] as AllowedUse[] | undefined,
          assignmentMode: flags['assignment-mode'] as PoolInput['assignmentMode'],
          disableBGPExport: flags['disable-bgp-export'],
          labels: flags.label ? parseKeyValues(flags.label, 'label') : undefined,
        },
      ]
    }
    const ctx = await this.ctx(flags)
    const created = await createPools(ctx, inputs)
    for (const p of created)
      this.out(`Successfully created IP pool ${p.name} (${p.spec.cidr}, block size /${p.spec.blockSize})\n`)
    for (const w of await poolCapacityWarnings(ctx, created)) process.stderr.write(`${w}\n`)
  }
}
