import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {ValidationError} from '../../lib/errors.js'
import {releaseByHandle, releaseIps} from '../../lib/ipam/release.js'

export default class IpamRelease extends BaseCommand {
  static override summary = 'Release addresses by IP, or every address of a handle.'
  static override description = 'With --ip, every address must currently be assigned; otherwise nothing is released and the exit status is 3.'
  static override examples = ['<%= config.bin %> <%= command.id %> --ip 10.65.0.5', '<%= config.bin %> <%= command.id %> --handle pod-a']
  static override flags = {
    ip: Flags.string({multiple: true, summary: 'Address to release (repeatable).', exactlyOne: ['ip', 'handle']}),
    handle: Flags.string({summary: 'Release every address of this handle and delete the handle.', exactlyOne: ['ip', 'handle']}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamRelease)
    const ctx = await this.ctx(flags)
    if (flags.handle !== undefined) {
      const released = await releaseByHandle(ctx, flags.handle)
      this.out(`Successfully released ${released.length} IP address${released.length === 1 ? '' : 'es'} of handle ${flags.handle}${released.length ? ': ' + released.join(', ') : ''}\n`)
      return
    }
    if (!flags.ip?.length) throw new ValidationError('give --ip ADDRESS or --handle ID')
    const r = await releaseIps(ctx, flags.ip.map((ip) => ({ip})), {requireAllocated: true})
    for (const ip of r.released) this.out(`Successfully released IP address ${ip}\n`)
  }
}
