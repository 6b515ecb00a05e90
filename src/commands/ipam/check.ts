import os from 'node:os'
import {Flags} from '@oclif/core'
import {terminalProgress} from '../../cli/progress.js'
import {BaseCommand} from '../../cli/base.js'
import {type CheckAllocation, checkIpam, type CheckResult} from '../../lib/ipam/check.js'
import {buildReport} from '../../lib/ipam/check-report.js'
import {openReport} from '../../lib/ipam/report-file.js'

export default class IpamCheck extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = 'Check IPAM for leaked addresses, leaked and missing handles, and invalid blocks.'
  static override description = [
    'Read-only. Prints what calicoctl ipam check prints: an address is in use when a workload endpoint lists it, a Node record names it as a tunnel address (spec.bgp.ipv4IPIPTunnelAddr, spec.ipv4VXLANTunnelAddr, spec.ipv6VXLANTunnelAddr, spec.wireguard.interfaceIPv4Address or interfaceIPv6Address, as Calico writes them on a shared datastore), or it is a Windows reservation. There are no Kubernetes Services here, so that section always finds 0.',
    'Beyond upstream it also reports block affinities without a block and host-affine blocks without an affinity record. The problem count is leaked addresses + in-use addresses outside active pools or without an allocation + leaked handles + invalid blocks + those two affinity findings; missing handles are listed but not counted, as upstream does. The exit status is 0 even when problems are found. On a terminal, a progress bar with counts is drawn on stderr while the blocks are checked (nothing on a pipe).',
    "With -o the JSON report (calicoctl's format, usable by ipam release --from-report) is written with mode 0600.",
  ].join('\n\n')
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --show-problem-ips',
    '<%= config.bin %> <%= command.id %> -o report.json',
  ]
  static override flags = {
    output: Flags.string({
      char: 'o',
      summary:
        'Write a JSON report to this file (mode 0600); an existing file is replaced only if it is an earlier report.',
    }),
    'show-problem-ips': Flags.boolean({summary: 'List each problem address and handle.'}),
    'show-all-ips': Flags.boolean({summary: 'List every address and handle (implies --show-problem-ips).'}),
    node: Flags.string({
      summary:
        "This machine's node name: its endpoints whose network namespace no longer exists count as leaked (default: the hostname).",
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamCheck)
    const ctx = await this.ctx(flags)
    const report = flags.output === undefined ? undefined : openReport(flags.output)
    const all = flags['show-all-ips']
    const problemIps = all || flags['show-problem-ips']
    // Progress only for a person watching; pipes and logs get nothing.
    const progress = terminalProgress()
    progress?.update('Loading IPAM data', 0, 0)
    const node = flags.node ?? os.hostname()
    const r = await checkIpam(ctx, {
      onProgress: progress && ((phase, done, total) => progress.update(phase, done, total)),
      netnsNode: node,
      endpointThread: true,
    })
    progress?.clear()
    this.out(checkText(r, {all, problemIps}))
    report?.write(buildReport(r))
  }
}

const attrText = (m: Record<string, string>) =>
  Object.keys(m)
    .sort()
    .map((k) => `${k}=${m[k]}`)
    .join(',')

function describe(a: CheckAllocation): string {
  const alt = Object.keys(a.alternateAttrs).length > 0 ? ` Alternate:${attrText(a.alternateAttrs)}` : ''
  return `Main:${a.handle ?? '<none>'} Extra:${attrText(a.attrs)}${alt}`
}

/** The text calicoctl prints, with the ipamctl affinity checks before the summary. */
function checkText(r: CheckResult, o: {all: boolean; problemIps: boolean}): string {
  const l: string[] = [
    'Checking IPAM for inconsistencies...',
    '',
    'Loading all IPAM blocks...',
    `Found ${r.blocks.length} IPAM blocks.`,
  ]
  for (const b of r.blocks) {
    l.push(` IPAM block ${b.cidr} affinity=${b.affinity ?? '<none>'}:`)
    if (o.all) for (const a of b.allocations) l.push(`  ${a.ip} allocated; attrs ${describe(a)}`)
  }
  l.push(`IPAM blocks record ${r.allocationCount} allocations.`, '', 'Loading all IPAM pools...')
  for (const p of r.activePools) l.push(`  ${p}`)
  l.push(`Found ${r.activePools.length} active IP pools.`, '')
  l.push('Loading all nodes.')
  if (o.all)
    for (const [ip, owners] of r.owners)
      for (const w of owners) if (w.startsWith('Node(')) l.push(`  ${ip} belongs to ${w}`)
  l.push(`Found ${r.nodeTunnelIps} node tunnel IPs.`, '')
  l.push(
    'Loading all service load balancer IPs.',
    'No configuration for LoadBalancer kubecontroller found, skipping service check',
    '',
  )
  l.push('Loading all workload endpoints.')
  if (o.all)
    for (const [ip, owners] of r.owners)
      for (const w of owners) if (w.startsWith('Workload(')) l.push(`  ${ip} belongs to ${w}`)
  l.push(`Found ${r.workloadIps} workload IPs.`, `Workloads and nodes are using ${r.ownedIps} IPs.`, '')
  l.push('Loading all handles', 'Looking for top (up to 20) nodes by allocations...')
  for (const n of r.nodeAllocations.slice(0, 20)) l.push(`  ${n.node} has ${n.count} allocations`)
  const max = r.nodeAllocations[0]?.count ?? 0
  const median = r.nodeAllocations[Math.floor(r.nodeAllocations.length / 2)]?.count ?? 0
  l.push(`Node with most allocations has ${max}; median is ${median}`, '')
  l.push('Scanning for IPs that are allocated but not actually in use...')
  if (o.problemIps) for (const a of r.leaked) l.push(`  ${a.ip} leaked; attrs ${describe(a)}`)
  l.push(`Found ${r.leaked.length} IPs that are allocated in IPAM but not actually in use.`)
  l.push('Scanning for IPs that are in use by a workload or node but not allocated in IPAM...')
  if (o.problemIps) {
    for (const ip of r.multipleOwners) l.push(`  ${ip} has multiple owners.`)
    for (const x of r.notInActivePool) l.push(`  ${x.ip} in use by ${x.owner} is not in any active IP pool.`)
    for (const x of r.noAllocation)
      l.push(`  ${x.ip} in use by ${x.owner} and in active IPAM pool but has no IPAM allocation.`)
  }
  l.push(`Found ${r.notInActivePool.length} in-use IPs that are not in active IP pools.`)
  l.push(
    `Found ${r.noAllocation.length} in-use IPs that are in active IP pools but have no corresponding IPAM allocation.`,
    '',
  )
  l.push('Scanning for IPAM handles with no matching IPs...')
  if (o.all) for (const h of r.leakedHandles) l.push(`  ${h.id} doesn't have any active IPs.`)
  l.push(
    `Found ${r.leakedHandles.length} handles with no matching IPs (and ${r.handlesWithMatches} handles with matches).`,
  )
  l.push('Scanning for IPs with missing handle...')
  if (o.problemIps) for (const h of r.missingHandles) l.push(`  ${h} is in use in a block but doesn't exist.`)
  l.push(`Found ${r.missingHandles.length} handles mentioned in blocks with no matching handle resource.`)
  l.push('Validating IPAMBlock structures...')
  for (const b of r.invalidBlocks)
    for (const reason of b.reasons) l.push(`  IPAMBlock BlockKey(cidr=${b.cidr}) is invalid: ${reason}`)
  l.push(`Found ${r.invalidBlocks.length} invalid IPAMBlocks.`)
  l.push('Checking block affinities (ipamctl)...')
  for (const a of r.affinitiesWithoutBlock) l.push(`  Affinity of ${a.host} for ${a.cidr} (${a.state}) has no block.`)
  for (const b of r.blocksWithoutAffinity)
    l.push(`  Block ${b.cidr} has affinity host:${b.host} but no affinity record.`)
  l.push(`Found ${r.affinitiesWithoutBlock.length} block affinities with no matching block.`)
  l.push(`Found ${r.blocksWithoutAffinity.length} blocks with no matching affinity record.`)
  l.push(`Check complete; found ${r.problems} problems.`)
  return `${l.join('\n')}\n`
}
