import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {reservationsTable} from '../../cli/views.js'
import {listReservations, reservationResource} from '../../lib/ipam/reservation.js'

export default class ReservationList extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'List IP reservations and the CIDRs they reserve.'
  static override aliases = ['reservation ls']
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> -o yaml']
  static override flags = {output: outputFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(ReservationList)
    const reservations = await listReservations(await this.ctx(flags))
    this.out(render(flags.output, reservations.map(reservationResource), () => reservationsTable(reservations)))
  }
}
