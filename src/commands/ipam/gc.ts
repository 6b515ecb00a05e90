import fs from 'node:fs'
import os from 'node:os'
import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {terminalProgress} from '../../cli/progress.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {type GcCandidate, type GcPlan, parseDuration, planGc, runGc} from '../../lib/ipam/gc.js'
import {netnsLiveness} from '../../lib/workload/endpoint.js'

export default class IpamGc extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Release leaked addresses older than a grace period and delete leaked handles.'
  static override description = [
    'Leaked means what ipam check reports: allocated, not cooling down, and no workload endpoint or Node record (tunnel address) uses it. An allocation is old enough when its timestamp attribute is older than --grace; one without a timestamp counts as old. The grace period covers a CNI ADD that has allocated but not yet written its endpoint.',
    'Only workload allocations are released: a CNI handle <network>.<containerID> with namespace and pod attributes or an ipamctl.io/netns attribute, as the CNI plugins write them, and not a tunnel type. One whose network namespace the plugins recorded (ipamctl.io/netns) only when its node is --node and that namespace is gone. Any other leak (ipam assign, a tunnel address, another tool\'s allocation) is listed as "leaked, not released: not a workload allocation" and left for ipam release.',
    'Safe on a live cluster: each address is released only if its handle and sequence number are still those seen by the scan and no endpoint claims it meanwhile, and each handle is deleted only if unchanged since the scan; anything else is skipped and reported.',
    'Asks for confirmation on a terminal; pass --yes in scripts (without a terminal and without --yes it refuses, exit 2). --dry-run prints the same plan, line for line, and changes nothing.',
    'On a terminal, a progress bar with counts is drawn on stderr while the store is scanned (nothing on a pipe).',
  ].join('\n\n')
  static override examples = [
    '<%= config.bin %> <%= command.id %> --dry-run',
    '<%= config.bin %> <%= command.id %> --grace 1h --yes',
  ]
  static override flags = {
    grace: Flags.string({summary: 'Leave leaked addresses younger than this alone (Go duration).', default: '10m'}),
    'dry-run': Flags.boolean({summary: 'Only print what would be done.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'}),
    node: Flags.string({
      summary:
        "This machine's node name: its endpoints whose network namespace is gone count as leaked (default: the hostname).",
    }),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamGc)
    const graceMs = parseDuration(flags.grace)
    const dry = flags['dry-run']
    const question = 'Release the leaked addresses and delete the leaked handles listed above?'
    // Refuse a script before doing any work, so its output is only the error.
    if (!dry && !flags.yes && !(process.stdin.isTTY && process.stdout.isTTY)) await confirmOrRefuse(question, false)
    const ctx = await this.ctx(flags)
    const node = flags.node ?? os.hostname()
    const exists = (p: string) => fs.existsSync(p)
    const liveness = netnsLiveness(node, exists)
    // Progress only for a person watching; pipes and logs get nothing.
    const progress = terminalProgress()
    const plan = await planGc(ctx, {
      graceMs,
      netnsNode: node,
      endpointThread: true,
      here: {node, exists},
      onProgress: progress && ((phase, done, total) => progress.update(phase, done, total)),
    })
    progress?.clear()
    const lines = planLines(plan, dry, flags.grace)
    if (plan.ips.length + plan.handles.length + plan.endpoints.length === 0) {
      this.out(`${[...lines, 'Nothing to clean up.'].join('\n')}\n`)
      return
    }
    this.out(`${lines.join('\n')}\n`)
    if (dry) {
      const endpoints = plan.endpoints.length > 0 ? ` and ${plan.endpoints.length} endpoint records` : ''
      this.out(
        `Dry run: would release ${plan.ips.length} addresses and delete ${plan.handles.length} handles${endpoints}; nothing was changed.\n`,
      )
      return
    }
    if (!(await confirmOrRefuse(question, flags.yes))) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    const r = await runGc(ctx, plan, {nodeNetnsExists: liveness, rerun: this.commandLine(['--yes'])})
    const out = [`Released ${r.released.length} addresses; deleted ${r.deletedHandles.length} handles.`]
    if (r.skippedIps.length > 0)
      out.push(`Skipped ${r.skippedIps.length} addresses that changed since the scan: ${r.skippedIps.join(', ')}`)
    if (r.deletedEndpoints.length > 0)
      out.push(
        `Deleted ${r.deletedEndpoints.length} endpoint records of pods whose network namespace is gone: ${r.deletedEndpoints.join(', ')}`,
      )
    if (r.skippedHandles.length > 0)
      out.push(`Skipped ${r.skippedHandles.length} handles that changed since the scan: ${r.skippedHandles.join(', ')}`)
    this.out(`${out.join('\n')}\n`)
  }
}

const allocated = (c: GcCandidate) =>
  `(handle ${c.handle ?? '<none>'}, allocated ${c.creationTimestamp ?? 'at an unknown time'})`

/**
 * The plan, the same lines in the same order for a dry run and a real one (only the verbs differ): a real run
 * does exactly this, less what changed since the scan (reported after it).
 */
function planLines(plan: GcPlan, dry: boolean, grace: string): string[] {
  const lines: string[] = []
  for (const c of plan.ips) lines.push(`${dry ? 'Would release' : 'Releasing'} ${c.ip} ${allocated(c)}`)
  for (const h of plan.handles) lines.push(`${dry ? 'Would delete' : 'Deleting'} leaked handle ${h.id}`)
  for (const e of plan.endpoints)
    lines.push(`${dry ? 'Would delete' : 'Deleting'} endpoint record ${e.name} (its network namespace is gone)`)
  if (plan.tooYoung.length > 0)
    lines.push(
      `Leaving ${plan.tooYoung.length} leaked addresses younger than ${grace}: ${plan.tooYoung.map((c) => c.ip).join(', ')}`,
    )
  if (plan.netnsAlive.length > 0)
    lines.push(
      `Leaving ${plan.netnsAlive.length} addresses whose network namespace still exists on this node: ${plan.netnsAlive.map((c) => c.ip).join(', ')}`,
    )
  if (plan.otherNode.length > 0) {
    lines.push(
      `Leaked, not released: an attachment of another node, whose network namespace only that node can check (run ipam gc there, or node remove NODE --release-addresses for a node gone for good): ${plan.otherNode.length} addresses`,
    )
    for (const c of plan.otherNode)
      lines.push(`  ${c.ip} (node ${c.node || '<none>'}, netns ${c.netns}, handle ${c.handle ?? '<none>'})`)
  }
  // One header and one short line each: readable with thousands of manual assignments.
  if (plan.notWorkload.length > 0) {
    lines.push(
      `Leaked, not released: not a workload allocation (release it with \`ipam release\`): ${plan.notWorkload.length} addresses`,
    )
    for (const c of plan.notWorkload) lines.push(`  ${c.ip} ${allocated(c)}`)
  }
  return lines
}
