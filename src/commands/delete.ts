import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../cli/base.js'
import {confirmOrRefuse} from '../cli/prompt.js'
import {fileFlag, summary} from '../cli/resources.js'
import {ValidationError} from '../lib/errors.js'
import {readTextFile} from '../lib/files.js'
import {parseManifest} from '../lib/ipam/manifest.js'
import {deleteResources, type DeleteRef, refsOf} from '../lib/resources/write.js'

export default class Delete extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Delete resources named on the command line or in a manifest.'
  static override description =
    `Every object is looked up first: a missing one fails the command before anything is deleted (exit 3), unless --skip-not-exists. A pool is deleted as pool delete does it (disabled, hosts' block affinities released, then removed; its allocated addresses stay), a node as node remove does it. Asks on a terminal; scripts pass --yes.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> ippool old-pool --yes',
    '<%= config.bin %> <%= command.id %> -f pools.yaml --skip-not-exists --yes',
  ]
  static override strict = false
  static override args = {
    kind: Args.string({description: 'Resource kind or alias (without -f).'}),
    name: Args.string({description: 'Names of the objects to delete (any number).'}),
  }
  static override flags = {
    file: fileFlag,
    'skip-not-exists': Flags.boolean({summary: 'Objects that do not exist are not an error.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation.'}),
  }

  static override interruptible = true

  async run(): Promise<void> {
    const {args, argv, flags} = await this.parse(Delete)
    let refs: DeleteRef[]
    if (flags.file) {
      if (args.kind) throw new ValidationError('give either KIND NAME… or -f FILE, not both')
      refs = refsOf(parseManifest(readTextFile(flags.file, 'manifest'), flags.file))
    } else {
      const names = (argv as string[]).slice(1)
      if (!args.kind || names.length === 0) throw new ValidationError('give KIND NAME… or -f FILE')
      refs = names.map((name) => ({kind: args.kind!, name}))
    }
    const ctx = await this.ctx(flags)
    const what = refs.map((r) => `${r.kind}(${r.name})`).join(', ')
    if (!(await confirmOrRefuse(`Delete ${what}?`, flags.yes))) {
      this.out('Aborted; nothing was changed.\n')
      return
    }
    this.out(summary('deleted', await deleteResources(ctx, refs, {skipNotExists: flags['skip-not-exists']})))
  }
}
