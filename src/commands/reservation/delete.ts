import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {NotFoundError} from '../../lib/errors.js'
import {deleteReservation, listReservations} from '../../lib/ipam/reservation.js'

export default class ReservationDelete extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Delete an IP reservation; its addresses become available to new allocations.'
  static override aliases = ['reservation rm']
  static override examples = ['<%= config.bin %> <%= command.id %> gateways --yes']
  static override args = {name: Args.string({required: true, description: 'Reservation name.'})}
  static override flags = {yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'})}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ReservationDelete)
    const ctx = await this.ctx(flags)
    // Look it up first so an unknown name is reported as such, not as a refused confirmation.
    const r = (await listReservations(ctx)).find((x) => x.name === args.name)
    if (!r) throw new NotFoundError(`IP reservation ${args.name} not found`)
    if (!(await confirmOrRefuse(`Delete IP reservation ${r.name} (${r.reservedCIDRs.join(', ')})?`, flags.yes))) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    await deleteReservation(ctx, r.name)
    this.out(`Successfully deleted IP reservation ${r.name}\n`)
  }
}
