import {BaseCommand} from '../cli/base.js'
import {requiredFileFlag, summary} from '../cli/resources.js'
import {readTextFile} from '../lib/files.js'
import {parseManifest} from '../lib/ipam/manifest.js'
import {writeResources, writtenPoolWarnings} from '../lib/resources/write.js'

export default class Apply extends BaseCommand {
  static override storeMode = 'create' as const
  static override summary =
    'Create or update every resource of a manifest, all or nothing; re-running it changes nothing.'
  static override description =
    `The manifest holds projectcalico.org/v3 objects (IPPool, IPReservation, IPAMConfiguration, Node): YAML documents, JSON, or a List. Every object is checked first and all of them are written in one transaction, or none is. An object that already says what the manifest says is not written, so a provisioning script can run again and again.
An IPPool's CIDR and blockSize cannot change while blocks exist in it; disabled, nodeSelector, natOutgoing, the encapsulation modes, allowedUses, assignmentMode and labels can. Of an existing Node only the labels are changed. A metadata.resourceVersion in the manifest must be the stored one (exit 4 otherwise).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> -f provisioning.yaml',
    '<%= config.bin %> get ippool default-ipv4 -o yaml | sed "s/disabled: false/disabled: true/" | <%= config.bin %> <%= command.id %> -f -',
  ]
  static override flags = {file: requiredFileFlag}

  async run(): Promise<void> {
    const {flags} = await this.parse(Apply)
    const objs = parseManifest(readTextFile(flags.file, 'manifest'), flags.file)
    const ctx = await this.ctx(flags)
    const outcomes = await writeResources(ctx, objs, 'apply')
    this.out(summary('applied', outcomes))
    for (const w of await writtenPoolWarnings(ctx, outcomes)) process.stderr.write(`${w}\n`)
  }
}
