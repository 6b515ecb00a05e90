import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {ValidationError} from '../../lib/errors.js'
import {ALLOWED_USES, ASSIGNMENT_MODES, ENCAP_MODES} from '../../lib/ipam/pool.js'
import {getPool} from '../../lib/ipam/pool-admin.js'
import {applyLabelChanges, updateResource} from '../../lib/resources/write.js'

export default class PoolUpdate extends BaseCommand {
  static override summary = 'Change an IP pool: enable or disable it, its node selector, modes, uses or labels.'
  static override description =
    'The change goes through the same path as ipamctl apply: one write guarded by the revision read, so a concurrent edit of the pool is never overwritten, and a pool already as asked is left untouched. The CIDR and block size cannot be changed here (apply refuses them while the pool has blocks).'
  static override examples = [
    '<%= config.bin %> <%= command.id %> old-pool --enable',
    '<%= config.bin %> <%= command.id %> 10.65.0.0/16 --disable',
    `<%= config.bin %> <%= command.id %> rack-a --node-selector 'rack == "a"' --label tier=gold`,
  ]
  static override storeMode = 'update' as const
  static override args = {pool: Args.string({required: true, description: 'Pool name or CIDR.'})}
  static override flags = {
    enable: Flags.boolean({summary: 'Let the pool hand out addresses again.'}),
    disable: Flags.boolean({summary: 'Stop new allocations from the pool (allocated addresses stay).'}),
    'node-selector': Flags.string({summary: 'Calico selector choosing the nodes that use this pool.'}),
    'nat-outgoing': Flags.boolean({
      allowNo: true,
      summary: 'Masquerade traffic leaving the pool (--no-nat-outgoing: stop).',
    }),
    'ipip-mode': Flags.string({options: [...ENCAP_MODES], summary: 'IP-in-IP encapsulation.'}),
    'vxlan-mode': Flags.string({options: [...ENCAP_MODES], summary: 'VXLAN encapsulation.'}),
    'allowed-uses': Flags.string({
      multiple: true,
      delimiter: ',',
      options: [...ALLOWED_USES],
      summary: 'What addresses may be used for.',
    }),
    'assignment-mode': Flags.string({options: [...ASSIGNMENT_MODES], summary: 'Automatic or Manual.'}),
    label: Flags.string({multiple: true, summary: 'KEY=VALUE sets a label, KEY- removes it (repeatable).'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PoolUpdate)
    const spec: Record<string, unknown> = {}
    if (flags.enable || flags.disable) {
      if (flags.enable === flags.disable) throw new ValidationError('give exactly one of --enable and --disable')
      spec.disabled = Boolean(flags.disable)
    }
    if (flags['node-selector'] !== undefined) spec.nodeSelector = flags['node-selector']
    if (flags['nat-outgoing'] !== undefined) spec.natOutgoing = flags['nat-outgoing']
    if (flags['ipip-mode']) spec.ipipMode = flags['ipip-mode']
    if (flags['vxlan-mode']) spec.vxlanMode = flags['vxlan-mode']
    if (flags['allowed-uses']) spec.allowedUses = flags['allowed-uses']
    if (flags['assignment-mode']) spec.assignmentMode = flags['assignment-mode']
    if (Object.keys(spec).length === 0 && !flags.label)
      throw new ValidationError(
        'give exactly one of --enable and --disable, or another change (--node-selector, --nat-outgoing, --label, …)',
      )
    if (flags.label) applyLabelChanges({}, flags.label, true)
    const ctx = await this.ctx(flags)
    const pool = await getPool(ctx, args.pool)
    const r = await updateResource(ctx, 'IPPool', pool.name, (cur) => {
      const labels = flags.label
        ? applyLabelChanges((cur.metadata.labels ?? {}) as Record<string, string>, flags.label, true)
        : cur.metadata.labels
      return {...cur, metadata: {...cur.metadata, labels}, spec: {...cur.spec, ...spec}}
    })
    const changed = r.outcome.result !== 'unchanged'
    const name = `IP pool ${pool.name} (${pool.spec.cidr})`
    if (Object.keys(spec).length === 1 && spec.disabled !== undefined && !flags.label) {
      const state = flags.disable ? 'disabled' : 'enabled'
      this.out(changed ? `${name} is now ${state}\n` : `${name} was already ${state}; nothing was changed\n`)
    } else this.out(changed ? `${name} was updated\n` : `${name} already was as asked; nothing was changed\n`)
  }
}
