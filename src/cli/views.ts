// Human layouts of the read commands, following calicoctl's tables (docs/calico.md#calicoctl-tables).
import type {Borrowed, PoolUsage, StoredBlock} from '../lib/ipam/query.js'
import {ORPHANED} from '../lib/ipam/query.js'
import type {Pool} from '../lib/ipam/pool.js'
import type {Reservation} from '../lib/ipam/reservation.js'
import type {IpamConfig} from '../lib/ipam/records.js'
import type {NodeRecord} from '../lib/ipam/node.js'
import type {NodeUsage} from '../lib/ipam/node-removal.js'
import type {BlockMapRow, CellState} from '../lib/ipam/block-map.js'
import {countWithPercent, percentHalfEven} from '../lib/format/numbers.js'
import {formatCidr} from '../lib/net/cidr.js'
import {keyGroups, type MigrationPlan, type StoreStatus} from '../lib/store/admin.js'
import type {StoreMember} from '../lib/store/store.js'
import {cellStyle} from './style.js'
import {boxTable, plainTable} from './table.js'

/**
 * calicoctl's table. `bars` adds a UTILIZATION column for people at a terminal; callers pass it only when
 * stdout is a TTY, so piped output keeps calicoctl's exact layout.
 */
export function utilizationTable(
  usage: readonly PoolUsage[],
  showBlocks: boolean,
  opts: {bars?: boolean} = {},
): string {
  const rows: string[][] = []
  const row = (
    grouping: string,
    u: {cidr: string; capacity: bigint; inUse: bigint; reserved: bigint; free: bigint},
  ) => {
    const r = [
      grouping,
      u.cidr,
      String(u.capacity),
      countWithPercent(u.inUse, u.capacity),
      countWithPercent(u.reserved, u.capacity),
      countWithPercent(u.free, u.capacity),
    ]
    if (opts.bars) r.push(usageBar(u.inUse, u.capacity))
    rows.push(r)
  }
  for (const p of usage) {
    if (p.name !== ORPHANED) row('IP Pool', p)
    if (showBlocks) for (const b of p.blocks) row('Block', b)
  }
  const head = ['GROUPING', 'CIDR', 'IPS TOTAL', 'IPS IN USE', 'IPS RESERVED', 'IPS FREE']
  const align = ['left', 'left', 'right', 'right', 'right', 'right'] as const
  return opts.bars ? boxTable([...head, 'UTILIZATION'], rows, [...align, 'left']) : boxTable(head, rows, [...align])
}

const BAR_WIDTH = 10

/** `████░░░░░░ 40%`: the filled part rounds like the percentage, so the two never disagree. */
export function usageBar(n: bigint, total: bigint): string {
  const filled = Number(total === 0n ? 0n : percentHalfEven(n * BigInt(BAR_WIDTH), total * 100n))
  const cells = Math.min(BAR_WIDTH, Math.max(0, filled))
  return `${'█'.repeat(cells)}${'░'.repeat(BAR_WIDTH - cells)} ${percentHalfEven(n, total)}%`
}

const CELL_LETTER: Record<CellState, string> = {allocated: 'A', free: '.', reserved: 'R', cooldown: 'C'}
const CELL_NAME: Record<CellState, string> = {
  allocated: 'allocated',
  free: 'free',
  reserved: 'reserved',
  cooldown: 'cooling down',
}
const CELL_ORDER: readonly CellState[] = ['allocated', 'free', 'reserved', 'cooldown']

/**
 * The block as a grid, one row per 16 addresses labelled with the row's first address. Without colour
 * every cell is a letter, so the map survives pipes, logs and NO_COLOR terminals.
 */
export function blockMapView(title: string, rows: readonly BlockMapRow[], colour: boolean): string {
  const cell = (s: CellState) => (colour ? cellStyle[s]('■') : CELL_LETTER[s])
  const width = rows.reduce((w, r) => Math.max(w, r.label.length), 0)
  const out = [title, ...rows.map((r) => `${r.label.padEnd(width)}  ${r.cells.map(cell).join(' ')}`)]
  out.push(`Legend: ${CELL_ORDER.map((s) => `${cell(s)} ${CELL_NAME[s]}`).join('  ')}`)
  return `${out.join('\n')}\n`
}

export function borrowedTable(b: {borrowed: Borrowed[]; withoutNode: number}): string {
  const table = boxTable(
    ['IP', 'BORROWING-NODE', 'BLOCK', 'BLOCK OWNER', 'TYPE', 'ALLOCATED-TO'],
    b.borrowed.map((x) => [x.ip, x.borrowingNode, x.block, x.blockOwner, x.type, x.allocatedTo]),
  )
  const note =
    b.withoutNode > 0
      ? `\nNote: found ${b.withoutNode} IP allocations without an explicit node association. Unable to determine if they are borrowed.\n`
      : ''
  return table + note
}

export function configTable(c: IpamConfig): string {
  return boxTable(
    ['PROPERTY', 'VALUE'],
    [
      ['StrictAffinity', String(c.strictAffinity)],
      ['AutoAllocateBlocks', String(c.autoAllocateBlocks)],
      ['MaxBlocksPerHost', String(c.maxBlocksPerHost)],
      ['KubeVirtVMAddressPersistence', c.kubeVirtVMAddressPersistence],
      ['IPCooldownSeconds', String(c.ipCooldownSeconds)],
    ],
  )
}

export function poolsTable(pools: readonly Pool[]): string {
  return plainTable(
    ['NAME', 'CIDR', 'NAT', 'IPIPMODE', 'VXLANMODE', 'DISABLED', 'DISABLEBGPEXPORT', 'SELECTOR', 'ASSIGNMENTMODE'],
    pools.map((p) => [
      p.name,
      p.spec.cidr,
      String(p.spec.natOutgoing),
      p.spec.ipipMode,
      p.spec.vxlanMode,
      String(p.spec.disabled),
      String(p.spec.disableBGPExport),
      p.spec.nodeSelector,
      p.spec.assignmentMode,
    ]),
  )
}

export function blocksTable(blocks: readonly StoredBlock[]): string {
  return plainTable(
    ['CIDR', 'AFFINITY', 'CLAIMED', 'IN USE', 'FREE'],
    blocks.map(({block}) => [
      formatCidr(block.cidr),
      block.affinity ?? '<none>',
      block.affinityClaimTime ?? '',
      String(block.allocations.length - block.unallocated.length),
      String(block.unallocated.length),
    ]),
  )
}

export function nodesTable(nodes: readonly (NodeRecord & NodeUsage)[]): string {
  return plainTable(
    ['NAME', 'BLOCKS', 'ADDRESSES', 'LABELS'],
    nodes.map((n) => [
      n.name,
      String(n.blocks),
      String(n.addresses),
      Object.entries(n.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    ]),
  )
}

export function statusTable(st: StoreStatus): string {
  const rows: string[][] = [
    ['Datastore', `${st.type} (${st.sources.datastoreType ?? 'default'})`],
    [
      st.type === 'etcdv3' ? 'Endpoints' : 'File',
      `${st.location} (${(st.type === 'etcdv3' ? st.sources.etcdEndpoints : st.sources.datastorePath) ?? 'default'})`,
    ],
    ['Config file', st.configFile ?? '<none>'],
    ['Healthy', st.healthy ? 'yes' : `no: ${st.error ?? ''}`],
  ]
  if (st.healthy) {
    rows.push(['Revision', String(st.revision)], ['Latency', `${st.latencyMs} ms`])
    const k = st.keys!
    rows.push([
      'Keys',
      `${k.total} (pools ${k.pools}, blocks ${k.blocks}, affinities ${k.affinities}, handles ${k.handles}, nodes ${k.nodes})`,
    ])
  }
  for (const [i, m] of (st.members ?? []).entries()) rows.push([`Member ${i + 1}`, memberText(m)])
  return boxTable(['PROPERTY', 'VALUE'], rows)
}

function memberText(m: StoreMember): string {
  if (!m.reachable) return `${m.endpoint}: unreachable (${m.error ?? 'no answer'})`
  const role = m.leader ? 'leader' : m.hasLeader ? 'follower' : 'no leader'
  const mb = ((m.dbSizeBytes ?? 0) / 1e6).toFixed(1)
  return `${m.endpoint}: ${role}, db ${mb} MB, raft index ${m.raftIndex} (term ${m.raftTerm}), id ${m.id}`
}

export function reservationsTable(reservations: readonly Reservation[]): string {
  return plainTable(
    ['NAME', 'CIDRS'],
    reservations.map((r) => [r.name, r.reservedCIDRs.join(',')]),
  )
}

/** What `datastore migrate` will do; the dry run and the real run print the same text. */
export function migrationPlanText(p: MigrationPlan): string {
  const groups = (keys: readonly string[]) =>
    keyGroups(keys).flatMap((g) =>
      g.keys.length > 0 ? g.keys.map((k) => `  ${k}`) : [`  ${g.prefix}… (${g.count} keys)`],
    )
  const l = [
    `Source: ${p.source}, ${p.copy.length} keys under /calico/`,
    `Target: ${p.target}, ${p.targetKeys} keys under /calico/`,
    `Write ${p.copy.length} keys: ${p.created} new, ${p.overwritten.length} overwritten, ${p.unchanged} already equal`,
  ]
  if (p.overwritten.length > 0)
    l.push(`Overwrite ${p.overwritten.length} keys whose value differs:`, ...groups(p.overwritten))
  if (p.remove.length > 0) l.push(`Remove ${p.remove.length} keys the source does not have:`, ...groups(p.remove))
  return `${l.join('\n')}\n`
}
