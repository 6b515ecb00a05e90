// Human layouts of the read commands, following calicoctl's tables (reference §4).
import type {Borrowed, PoolUsage, StoredBlock} from '../lib/ipam/query.js'
import {ORPHANED} from '../lib/ipam/query.js'
import type {Pool} from '../lib/ipam/pool.js'
import type {Reservation} from '../lib/ipam/reservation.js'
import type {IpamConfig} from '../lib/ipam/records.js'
import type {NodeRecord} from '../lib/ipam/node.js'
import type {NodeUsage} from '../lib/ipam/node-removal.js'
import {countWithPercent} from '../lib/format/numbers.js'
import {formatCidr} from '../lib/net/cidr.js'
import type {StoreStatus} from '../lib/store/admin.js'
import {boxTable, plainTable} from './table.js'

export function utilizationTable(usage: readonly PoolUsage[], showBlocks: boolean): string {
  const rows: string[][] = []
  const row = (grouping: string, u: {cidr: string; capacity: bigint; inUse: bigint; reserved: bigint; free: bigint}) =>
    rows.push([grouping, u.cidr, String(u.capacity), countWithPercent(u.inUse, u.capacity), countWithPercent(u.reserved, u.capacity), countWithPercent(u.free, u.capacity)])
  for (const p of usage) {
    if (p.name !== ORPHANED) row('IP Pool', p)
    if (showBlocks) for (const b of p.blocks) row('Block', b)
  }
  return boxTable(['GROUPING', 'CIDR', 'IPS TOTAL', 'IPS IN USE', 'IPS RESERVED', 'IPS FREE'], rows, ['left', 'left', 'right', 'right', 'right', 'right'])
}

export function borrowedTable(b: {borrowed: Borrowed[]; withoutNode: number}): string {
  const table = boxTable(
    ['IP', 'BORROWING-NODE', 'BLOCK', 'BLOCK OWNER', 'TYPE', 'ALLOCATED-TO'],
    b.borrowed.map((x) => [x.ip, x.borrowingNode, x.block, x.blockOwner, x.type, x.allocatedTo]),
  )
  const note = b.withoutNode > 0 ? `\nNote: found ${b.withoutNode} IP allocations without an explicit node association. Unable to determine if they are borrowed.\n` : ''
  return table + note
}

export function configTable(c: IpamConfig): string {
  return boxTable(['PROPERTY', 'VALUE'], [
    ['StrictAffinity', String(c.strictAffinity)],
    ['AutoAllocateBlocks', String(c.autoAllocateBlocks)],
    ['MaxBlocksPerHost', String(c.maxBlocksPerHost)],
    ['KubeVirtVMAddressPersistence', c.kubeVirtVMAddressPersistence],
    ['IPCooldownSeconds', String(c.ipCooldownSeconds)],
  ])
}

export function poolsTable(pools: readonly Pool[]): string {
  return plainTable(
    ['NAME', 'CIDR', 'NAT', 'IPIPMODE', 'VXLANMODE', 'DISABLED', 'DISABLEBGPEXPORT', 'SELECTOR', 'ASSIGNMENTMODE'],
    pools.map((p) => [p.name, p.spec.cidr, String(p.spec.natOutgoing), p.spec.ipipMode, p.spec.vxlanMode, String(p.spec.disabled), String(p.spec.disableBGPExport), p.spec.nodeSelector, p.spec.assignmentMode]),
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
    nodes.map((n) => [n.name, String(n.blocks), String(n.addresses), Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(',')]),
  )
}

export function statusTable(st: StoreStatus): string {
  const rows: string[][] = [
    ['Datastore', `${st.type} (${st.sources.datastoreType ?? 'default'})`],
    [st.type === 'etcdv3' ? 'Endpoints' : 'File', `${st.location} (${(st.type === 'etcdv3' ? st.sources.etcdEndpoints : st.sources.datastorePath) ?? 'default'})`],
    ['Config file', st.configFile ?? '<none>'],
    ['Healthy', st.healthy ? 'yes' : `no: ${st.error ?? ''}`],
  ]
  if (st.healthy) {
    rows.push(['Revision', String(st.revision)], ['Latency', `${st.latencyMs} ms`])
    const k = st.keys!
    rows.push(['Keys', `${k.total} (pools ${k.pools}, blocks ${k.blocks}, affinities ${k.affinities}, handles ${k.handles}, nodes ${k.nodes})`])
  }
  return boxTable(['PROPERTY', 'VALUE'], rows)
}

export function reservationsTable(reservations: readonly Reservation[]): string {
  return plainTable(['NAME', 'CIDRS'], reservations.map((r) => [r.name, r.reservedCIDRs.join(',')]))
}
