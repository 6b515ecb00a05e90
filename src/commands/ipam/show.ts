import {Flags} from '@oclif/core'
import {terminalProgress} from '../../cli/progress.js'
import {BaseCommand, outputFlag} from '../../cli/base.js'
import {render} from '../../cli/render.js'
import {borrowedTable, configTable, utilizationTable} from '../../cli/views.js'
import {loadConfig} from '../../lib/ipam/context.js'
import {claimableLine, poolBlocks} from '../../lib/ipam/capacity-use.js'
import type {Cidr} from '../../lib/net/cidr.js'
import {assertValidIpText, borrowedIps, ipStatus, type IpStatus, utilization} from '../../lib/ipam/query.js'

export default class IpamShow extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary = "Show IP utilization, one address's owner, borrowed addresses, or the IPAM configuration."
  static override description =
    'Precedence when several are given, as calicoctl: --ip, --show-blocks, --show-borrowed, --show-configuration. Counts are exact, IPv6 included. On a terminal, a progress bar with counts is drawn on stderr while the blocks are read (nothing on a pipe).'
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --show-blocks',
    '<%= config.bin %> <%= command.id %> --ip 10.65.0.5',
    '<%= config.bin %> <%= command.id %> --show-borrowed -o json',
  ]
  static override flags = {
    ip: Flags.string({summary: 'Show who owns this address.'}),
    'show-blocks': Flags.boolean({summary: 'Also show each block.'}),
    'show-borrowed': Flags.boolean({summary: 'List addresses borrowed from blocks owned by other hosts.'}),
    'show-configuration': Flags.boolean({summary: 'Show the IPAM configuration.'}),
    output: outputFlag,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamShow)
    const ctx = await this.ctx(flags)
    const fmt = flags.output
    if (flags.ip !== undefined) {
      assertValidIpText(flags.ip)
      const st = await ipStatus(ctx, flags.ip)
      this.out(render(fmt, st, () => describeIp(flags.ip!, st)))
    } else if (flags['show-borrowed']) {
      const b = await borrowedIps(ctx)
      this.out(render(fmt, b, () => borrowedTable(b)))
    } else if (flags['show-configuration'] && !flags['show-blocks']) {
      const c = await loadConfig(ctx)
      this.out(render(fmt, c, () => configTable(c)))
    } else {
      const progress = terminalProgress()
      const blockCidrs: Cidr[] = []
      const u = await utilization(ctx, {
        onBlock: (cidr) => blockCidrs.push(cidr),
        onProgress: progress && ((done, total) => progress.update('Reading blocks', done, total)),
      })
      progress?.clear()
      // The bar column is for people at a terminal; piped output keeps calicoctl's exact table, with one line
      // after it (JSON and YAML stay as they were).
      // The block keys were just read: they need not be listed again.
      const claimable = fmt === 'table' ? `${claimableLine(await poolBlocks(ctx, undefined, blockCidrs))}\n` : ''
      this.out(
        render(
          fmt,
          u,
          () => utilizationTable(u, flags['show-blocks'], {bars: process.stdout.isTTY === true}) + claimable,
        ),
      )
    }
  }
}

function describeIp(ip: string, st: IpStatus): string {
  if (st.state === 'free') return `${ip} is not assigned\n`
  if (st.state === 'cooldown') return `${ip} is not assigned: it was released at ${st.releasedAt} and is in cooldown\n`
  const o = st.owner
  const lines = [`IP ${o.ip} is in use`, `Handle ID: ${o.handle ?? '<none>'}`, 'Active Owner Attributes:']
  const attrs = Object.entries(o.attrs).sort(([a], [b]) => (a < b ? -1 : 1))
  if (attrs.length === 0) lines.push('No Active Owner attributes defined')
  for (const [k, v] of attrs) lines.push(`  ${k}: ${v}`)
  const alt = Object.entries(o.alternateAttrs).sort(([a], [b]) => (a < b ? -1 : 1))
  if (alt.length > 0) lines.push('Alternate Owner Attributes:', ...alt.map(([k, v]) => `  ${k}: ${v}`))
  return `${lines.join('\n')}\n`
}
