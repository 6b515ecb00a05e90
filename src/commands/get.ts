import {Args} from '@oclif/core'
import {BaseCommand} from '../cli/base.js'
import {checkGetOutput, getOutputFlag, renderGet} from '../cli/resources.js'
import {kindNames, resolveKind} from '../lib/resources/kinds.js'
import {getResources} from '../lib/resources/write.js'

export default class Get extends BaseCommand {
  static override storeMode = 'read' as const
  static override summary =
    'Show resources of one kind, as calicoctl get does; -o yaml|json output re-applies unchanged.'
  static override description =
    `KIND is one of ${kindNames().join(', ')} or an alias calicoctl accepts (ippools, pool, ipamconfig, nodes, affinities, …). Without NAME every object of the kind is shown; -o yaml and -o json print one object when exactly one NAME is given, else a <Kind>List. BlockAffinity is read-only.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> ippools -o wide',
    '<%= config.bin %> <%= command.id %> ippool default-ipv4 -o yaml > pool.yaml',
    '<%= config.bin %> <%= command.id %> ippools -o custom-columns=NAME:.metadata.name,CIDR:.spec.cidr',
    '<%= config.bin %> <%= command.id %> nodes -o name',
  ]
  static override strict = false
  static override args = {
    kind: Args.string({required: true, description: 'Resource kind or alias.'}),
    name: Args.string({description: 'Names of the objects to show (any number; default: all).'}),
  }
  static override flags = {output: getOutputFlag}

  async run(): Promise<void> {
    const {args, argv, flags} = await this.parse(Get)
    resolveKind(args.kind)
    checkGetOutput(flags.output)
    const names = (argv as string[]).slice(1)
    const got = await getResources(await this.ctx(flags), args.kind, names)
    this.out(renderGet(flags.output, got, names.length === 1))
  }
}
