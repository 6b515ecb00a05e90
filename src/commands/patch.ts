import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../cli/base.js'
import {summary} from '../cli/resources.js'
import {nativeParse} from '../lib/codec/gojson.js'
import {ValidationError} from '../lib/errors.js'
import type {Resource} from '../lib/resources/model.js'
import {mergePatch, updateResource} from '../lib/resources/write.js'

export default class Patch extends BaseCommand {
  static override storeMode = 'update' as const
  static override summary = 'Change one resource with a JSON merge patch (RFC 7386), as calicoctl patch does.'
  static override description =
    'The patch is merged into the object get -o json prints (a null removes a field) and the result is written as replace writes it, guarded by the revision read; the same rules as apply hold.'
  static override examples = [
    `<%= config.bin %> <%= command.id %> ippool p1 -p '{"spec":{"disabled":true}}'`,
    `<%= config.bin %> <%= command.id %> node node-1 -p '{"metadata":{"labels":{"rack":"r2"}}}'`,
  ]
  static override args = {
    kind: Args.string({required: true, description: 'Resource kind or alias.'}),
    name: Args.string({required: true, description: 'Object name.'}),
  }
  static override flags = {patch: Flags.string({char: 'p', required: true, summary: 'JSON merge patch.'})}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Patch)
    let patch: unknown
    try {
      patch = nativeParse(flags.patch)
    } catch (err) {
      throw new ValidationError(`--patch: ${(err as Error).message}`)
    }
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
      throw new ValidationError('--patch must be a JSON object')
    const ctx = await this.ctx(flags)
    const r = await updateResource(ctx, args.kind, args.name, (cur) => mergePatch(cur, patch) as Resource)
    this.out(summary('patched', [r.outcome]))
  }
}
