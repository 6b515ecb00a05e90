import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {ValidationError} from '../../lib/errors.js'
import {readTextFile} from '../../lib/files.js'
import {parseManifest} from '../../lib/ipam/manifest.js'
import {createReservation} from '../../lib/ipam/reservation.js'
import {writeResources} from '../../lib/resources/write.js'

export default class ReservationCreate extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = 'Reserve CIDRs or addresses so that no new allocation uses them (IPReservation).'
  static override description =
    `A bare address reserves /32 (IPv4) or /128 (IPv6); a CIDR with host bits set (10.70.0.1/24) is refused.
Addresses already allocated inside a reserved CIDR stay allocated; only new allocations avoid them.
With -f, every IPReservation of a Calico manifest is created in one transaction, or none is (as ipamctl create -f does).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> gateways --cidr 10.65.0.0/30',
    '<%= config.bin %> <%= command.id %> vips --cidr 10.65.4.10 --cidr fd80:24e2:f998:72d6::10',
    '<%= config.bin %> <%= command.id %> -f reservations.yaml',
  ]
  static override args = {
    name: Args.string({
      description: 'Reservation name (lower-case letters, digits, "-" and ".").',
      ignoreStdin: true,
    }),
  }
  static override flags = {
    cidr: Flags.string({multiple: true, summary: 'CIDR or IP address to reserve (repeatable).', exclusive: ['file']}),
    file: Flags.string({
      char: 'f',
      summary: 'Calico IPReservation manifest (YAML or JSON, several documents, a List); "-" reads stdin.',
    }),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ReservationCreate)
    if (flags.file) {
      if (args.name) throw new ValidationError('give either a reservation NAME with --cidr, or -f FILE, not both')
      const objs = parseManifest(readTextFile(flags.file, 'manifest'), flags.file)
      for (const o of objs)
        if (o.obj.kind !== 'IPReservation')
          throw new ValidationError(`${o.where}: kind must be IPReservation (got ${JSON.stringify(o.obj.kind)})`)
      if (objs.length === 0) throw new ValidationError(`${flags.file}: no IPReservation found`)
      for (const o of await writeResources(await this.ctx(flags), objs, 'create'))
        this.out(`Successfully created IP reservation ${o.name}\n`)
      return
    }
    if (!args.name || !flags.cidr?.length) throw new ValidationError('give a reservation NAME and --cidr, or -f FILE')
    const r = await createReservation(await this.ctx(flags), {name: args.name, reservedCIDRs: flags.cidr})
    this.out(`Successfully created IP reservation ${r.name} (${r.reservedCIDRs.join(', ')})\n`)
  }
}
