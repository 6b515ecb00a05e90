// What each address of a block is doing right now, for `block inspect --map`. Pure: the caller supplies
// the block (already garbage-collected for the configured cooldown) and the reservations in force.
import {formatIp} from '../net/cidr.js'
import {type Block, isCoolingDown} from './block.js'
import type {ReservedMatcher} from './reservation.js'

export type CellState = 'allocated' | 'free' | 'reserved' | 'cooldown'

export interface BlockMapRow {
  /** The row's first address. */
  label: string
  cells: CellState[]
}

/** 16 cells per row: a /26 is four rows, and a row label advances by a round 16 (.0, .16, .32 …). */
export const CELLS_PER_ROW = 16

export function cellStates(b: Block, reserved: ReservedMatcher): CellState[] {
  return b.allocations.map((idx, o) => {
    if (idx !== null) return isCoolingDown(b.attributes?.[idx]) ? 'cooldown' : 'allocated'
    // An allocated address inside a reservation (made before the reservation) is shown as allocated:
    // it is in use, and the reservation only stops it from being handed out again.
    return reserved.any && reserved.isReserved({family: b.cidr.family, value: b.cidr.base + BigInt(o)})
      ? 'reserved'
      : 'free'
  })
}

export function blockMapRows(b: Block, reserved: ReservedMatcher): BlockMapRow[] {
  const states = cellStates(b, reserved)
  const rows: BlockMapRow[] = []
  for (let i = 0; i < states.length; i += CELLS_PER_ROW) {
    rows.push({label: formatIp(b.cidr.family, b.cidr.base + BigInt(i)), cells: states.slice(i, i + CELLS_PER_ROW)})
  }
  return rows
}
