import {BaseCommand} from '../cli/base.js'
import {requiredFileFlag, summary} from '../cli/resources.js'
import {readTextFile} from '../lib/files.js'
import {parseManifest} from '../lib/ipam/manifest.js'
import {writeResources, writtenPoolWarnings} from '../lib/resources/write.js'

export default class Replace extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Replace existing resources with a manifest, all or nothing; a missing one is exit 3.'
  static override description =
    'An object carrying metadata.resourceVersion (as get -o yaml prints it) replaces the stored one only if nobody changed it since: a stale manifest is refused with exit 4 and nothing is written.'
  static override examples = [
    '<%= config.bin %> get ippool p1 -o yaml > p1.yaml && $EDITOR p1.yaml && <%= config.bin %> <%= command.id %> -f p1.yaml',
  ]
  static override flags = {file: requiredFileFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(Replace)
    const objs = parseManifest(readTextFile(flags.file, 'manifest'), flags.file)
    const ctx = await this.ctx(flags)
    const outcomes = await writeResources(ctx, objs, 'replace')
    this.out(summary('replaced', outcomes))
    for (const w of await writtenPoolWarnings(ctx, outcomes)) process.stderr.write(`${w}\n`)
  }
}
