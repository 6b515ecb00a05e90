import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../cli/base.js'
import {summary} from '../cli/resources.js'
import {ValidationError} from '../lib/errors.js'
import {applyLabelChanges, updateResource} from '../lib/resources/write.js'

export default class Label extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Set (key=value) or remove (key-) labels of one resource, as calicoctl label does.'
  static override description =
    'Changing the value of an existing label needs --overwrite (exit 4 without it). The write is guarded by the revision read; of a Node only its labels are rewritten.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> node node-1 rack=r12 zone=a',
    '<%= config.bin %> <%= command.id %> ippool p1 tier=gold --overwrite',
    '<%= config.bin %> <%= command.id %> node node-1 rack-',
  ]
  static override strict = false
  static override args = {
    kind: Args.string({required: true, description: 'Resource kind or alias.'}),
    name: Args.string({required: true, description: 'Object name.'}),
    labels: Args.string({description: 'key=value to set, key- to remove (any number).'}),
  }
  static override flags = {overwrite: Flags.boolean({summary: 'Allow changing the value of an existing label.'})}

  async run(): Promise<void> {
    const {args, argv, flags} = await this.parse(Label)
    const changes = (argv as string[]).slice(2)
    if (changes.length === 0) throw new ValidationError('give at least one key=value or key- label change')
    applyLabelChanges({}, changes, true)
    const ctx = await this.ctx(flags)
    const r = await updateResource(ctx, args.kind, args.name, (cur) => {
      const labels = applyLabelChanges((cur.metadata.labels ?? {}) as Record<string, string>, changes, flags.overwrite)
      const metadata = {...cur.metadata, labels: Object.keys(labels).length > 0 ? labels : undefined}
      return {...cur, metadata}
    })
    this.out(summary('labeled', [r.outcome]))
  }
}
