import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {confirmOrRefuse} from '../../cli/prompt.js'
import {ConflictError, ValidationError} from '../../lib/errors.js'
import {assertAllAssigned, releaseByHandle, releaseIps} from '../../lib/ipam/release.js'
import {ipsByHandle} from '../../lib/ipam/query.js'
import {executeRelease, planRelease, readReports} from '../../lib/ipam/release-report.js'

const MODES = ['ip', 'handle', 'from-report']

export default class IpamRelease extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary =
    'Release addresses by IP, every address of a handle, or the leaks listed in ipam check reports.'
  static override description =
    'With --ip, every address must currently be assigned; otherwise nothing is released and the exit status is 3.\n\n' +
    'With --from-report (repeatable), the reports must come from this cluster (same cluster GUID, even with --force), at least one must have been made at the current ClusterInformation revision, and the datastore must be locked (datastore lock) unless --force is given; a report from another version is also refused without --force. Only addresses that every report lists as leaked (not in use, not cooling down) are released, each only if its sequence number still matches the report; leaked handles are deleted only if their revision still matches. Asks for confirmation on a terminal; scripts pass --yes (without a terminal and without --yes: exit status 2, nothing changed). Exit status 4 if some addresses had changed since the report.\n\n' +
    'Explicit targets (--ip, --handle) are released without a question, as calicoctl does.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --ip 10.65.0.5 --ip 10.65.0.6',
    '<%= config.bin %> <%= command.id %> --handle pod-a',
    '<%= config.bin %> <%= command.id %> --from-report report.json --yes',
  ]
  static override flags = {
    ip: Flags.string({multiple: true, summary: 'Address to release (repeatable).', exactlyOne: MODES}),
    handle: Flags.string({summary: 'Release every address of this handle and delete the handle.', exactlyOne: MODES}),
    'from-report': Flags.string({
      multiple: true,
      summary: 'Release the leaks listed in this ipam check report (repeatable: only leaks in every report).',
      exactlyOne: MODES,
    }),
    force: Flags.boolean({
      summary: 'With --from-report: go ahead although the datastore is not locked or a report is from another version.',
      dependsOn: ['from-report'],
    }),
    yes: Flags.boolean({
      char: 'y',
      summary: 'With --from-report: do not ask for confirmation (needed without a terminal).',
    }),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamRelease)
    const ctx = await this.ctx(flags)
    if (flags['from-report']?.length) {
      const reports = await readReports(flags['from-report'])
      // Every refusal comes before the question, so a refused run never asks and never writes.
      const plan = await planRelease(ctx, reports, {version: this.config.version, force: flags.force})
      for (const w of plan.warnings) this.out(`${w}\n`)
      const what = `${plan.ips.length} leaked IP address${plan.ips.length === 1 ? '' : 'es'} and ${plan.handles.length} leaked handle${plan.handles.length === 1 ? '' : 's'}`
      if (!(await confirmOrRefuse(`Release ${what}?`, flags.yes))) {
        this.out('Aborted; nothing was changed.\n')
        return
      }
      const s = await executeRelease(ctx, plan, (line) => this.out(`${line}\n`))
      if (s.failed.length > 0)
        throw new ConflictError(
          `${s.failed.length} address${s.failed.length === 1 ? '' : 'es'} changed since the report and were not released; regenerate the report`,
        )
      return
    }
    if (flags.handle !== undefined) {
      // Explicit targets run without a question, as calicoctl's `ipam release --ip` does: the caller named exactly
      // what goes. An unknown handle is exit 3 with nothing changed.
      await ipsByHandle(ctx, flags.handle)
      const released = await releaseByHandle(ctx, flags.handle)
      this.out(
        `Successfully released ${released.length} IP address${released.length === 1 ? '' : 'es'} of handle ${flags.handle}${released.length ? `: ${released.join(', ')}` : ''}\n`,
      )
      return
    }
    if (!flags.ip?.length) throw new ValidationError('give --ip ADDRESS, --handle ID or --from-report FILE')
    // Every address must be assigned, or nothing is released (exit 3).
    await assertAllAssigned(ctx, flags.ip)
    const r = await releaseIps(
      ctx,
      flags.ip.map((ip) => ({ip})),
      {requireAllocated: true},
    )
    for (const ip of r.released) this.out(`Successfully released IP address ${ip}\n`)
  }
}
