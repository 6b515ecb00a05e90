import {Flags} from '@oclif/core'
import {BaseCommand} from '../cli/base.js'
import {requiredFileFlag, summary} from '../cli/resources.js'
import {readTextFile} from '../lib/files.js'
import {parseManifest} from '../lib/ipam/manifest.js'
import {writeResources, writtenPoolWarnings} from '../lib/resources/write.js'

export default class Create extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary = 'Create every resource of a manifest, all or nothing; an existing one is an error (exit 4).'
  static override description =
    'With --skip-exists, objects that already exist are left as they are and the others are created. Everything is written in one transaction.'
  static override examples = ['<%= config.bin %> <%= command.id %> -f pools.yaml --skip-exists']
  static override flags = {
    file: requiredFileFlag,
    'skip-exists': Flags.boolean({summary: 'Leave objects that already exist untouched instead of failing.'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Create)
    const objs = parseManifest(readTextFile(flags.file, 'manifest'), flags.file)
    const ctx = await this.ctx(flags)
    const r = await writeResources(ctx, objs, 'create', {skipExists: flags['skip-exists']})
    this.out(summary('created', r))
    for (const w of await writtenPoolWarnings(ctx, r)) process.stderr.write(`${w}\n`)
  }
}
