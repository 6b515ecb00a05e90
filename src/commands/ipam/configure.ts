import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {parseGoBool, parseNonNegativeInt} from '../../lib/args.js'
import {ValidationError} from '../../lib/errors.js'
import {updateConfig} from '../../lib/ipam/config.js'
import {MAX_BLOCKS_PER_HOST_LIMIT, MAX_COOLDOWN_SECONDS, type IpamConfig} from '../../lib/ipam/records.js'

const bool =
  (flag: string) =>
  (text: string): boolean => {
    const b = parseGoBool(text)
    if (b === undefined)
      throw new ValidationError(`invalid value ${JSON.stringify(text)} for --${flag}: use true or false`)
    return b
  }

export default class IpamConfigure extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary =
    'Change the IPAM configuration (strict affinity, block cap, cooldown, automatic block allocation).'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --strictaffinity=true --max-blocks-per-host=4',
    '<%= config.bin %> <%= command.id %> --ip-cooldown-seconds=30',
  ]
  static override flags = {
    strictaffinity: Flags.string({summary: "Only allocate from the host's own blocks (true/false)."}),
    'max-blocks-per-host': Flags.string({
      summary: `Blocks a host may claim, 0 = default of 20 (0-${MAX_BLOCKS_PER_HOST_LIMIT}; needs strict affinity).`,
    }),
    'ip-cooldown-seconds': Flags.string({
      summary: `Seconds a released address waits before reuse (0-${MAX_COOLDOWN_SECONDS}).`,
    }),
    'auto-allocate-blocks': Flags.string({summary: 'Claim new blocks automatically (true/false).'}),
    'kubevirt-ip-persistence': Flags.string({
      options: ['Enabled', 'Disabled'],
      summary: 'KubeVirt VM address persistence.',
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(IpamConfigure)
    const changes: Partial<IpamConfig> = {}
    if (flags.strictaffinity !== undefined) changes.strictAffinity = bool('strictaffinity')(flags.strictaffinity)
    if (flags['max-blocks-per-host'] !== undefined)
      changes.maxBlocksPerHost = parseNonNegativeInt(
        flags['max-blocks-per-host'],
        '--max-blocks-per-host',
        MAX_BLOCKS_PER_HOST_LIMIT,
      )
    if (flags['ip-cooldown-seconds'] !== undefined)
      changes.ipCooldownSeconds = parseNonNegativeInt(
        flags['ip-cooldown-seconds'],
        '--ip-cooldown-seconds',
        MAX_COOLDOWN_SECONDS,
      )
    if (flags['auto-allocate-blocks'] !== undefined)
      changes.autoAllocateBlocks = bool('auto-allocate-blocks')(flags['auto-allocate-blocks'])
    if (flags['kubevirt-ip-persistence'] !== undefined)
      changes.kubeVirtVMAddressPersistence = flags[
        'kubevirt-ip-persistence'
      ] as IpamConfig['kubeVirtVMAddressPersistence']
    if (Object.keys(changes).length === 0)
      throw new ValidationError('at least one configuration option must be specified')
    await updateConfig(await this.ctx(flags), changes)
    const names: Record<keyof IpamConfig, string> = {
      strictAffinity: 'StrictAffinity',
      maxBlocksPerHost: 'MaxBlocksPerHost',
      ipCooldownSeconds: 'IPCooldownSeconds',
      autoAllocateBlocks: 'AutoAllocateBlocks',
      kubeVirtVMAddressPersistence: 'KubeVirtVMAddressPersistence',
    }
    for (const [k, v] of Object.entries(changes))
      this.out(`Successfully set ${names[k as keyof IpamConfig]} to: ${v}\n`)
  }
}
