import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {createReservation} from '../../lib/ipam/reservation.js'

export default class ReservationCreate extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = 'Reserve CIDRs or addresses so that no new allocation uses them (IPReservation).'
  static override description =
    `A bare address reserves /32 (IPv4) or /128 (IPv6); a CIDR with host bits set (10.70.0.1/24) is refused.
Addresses already allocated inside a reserved CIDR stay allocated; only new allocations avoid them.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> gateways --cidr 10.65.0.0/30',
    '<%= config.bin %> <%= command.id %> vips --cidr 10.65.4.10 --cidr fd80:24e2:f998:72d6::10',
  ]
  static override args = {
    name: Args.string({required: true, description: 'Reservation name (lower-case letters, digits, "-" and ".").'}),
  }
  static override flags = {
    cidr: Flags.string({required: true, multiple: true, summary: 'CIDR or IP address to reserve (repeatable).'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ReservationCreate)
    const r = await createReservation(await this.ctx(flags), {name: args.name, reservedCIDRs: flags.cidr})
    this.out(`Successfully created IP reservation ${r.name} (${r.reservedCIDRs.join(', ')})\n`)
  }
}
