// The shared base of every command: datastore flags, output flag, and the mapping from typed errors to
// one line on stderr plus a documented exit code.
import {Command, Flags, Errors} from '@oclif/core'
import {IpamError} from '../lib/errors.js'
import {makeCtx, type Ctx} from '../lib/ipam/context.js'
import {openStore} from '../lib/store/open.js'
import type {Store} from '../lib/store/store.js'
import type {OutputFormat} from './render.js'
import {errorStyle} from './style.js'

export abstract class BaseCommand extends Command {
  static override baseFlags = {
    'datastore-path': Flags.string({
      summary: 'Embedded datastore file (default: $IPAMCTL_DATASTORE_PATH, /var/lib/ipamctl/ipam.db for root, else $XDG_DATA_HOME/ipamctl/ipam.db).',
      helpGroup: 'GLOBAL',
    }),
    debug: Flags.boolean({summary: 'Show stack traces for errors.', helpGroup: 'GLOBAL'}),
  }

  private store?: Store

  protected async ctx(flags: {'datastore-path'?: string}): Promise<Ctx> {
    this.store = await openStore({path: flags['datastore-path']})
    return makeCtx(this.store)
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    await this.store?.close()
    return super.finally(err)
  }

  /** Print `text` exactly (no extra newline handling beyond what the text has). */
  protected out(text: string): void {
    process.stdout.write(text)
  }

  protected override async catch(err: Error & {exitCode?: number; oclif?: {exit?: number}}): Promise<unknown> {
    const debug = this.argv.includes('--debug')
    if (err instanceof Errors.ExitError) throw err
    const code = err instanceof IpamError ? err.exitCode : (err.oclif?.exit ?? 1)
    const firstLine = oneLine(err.message || String(err))
    const isUsage = !(err instanceof IpamError) && err.oclif?.exit === 2
    process.stderr.write(errorStyle(`Error: ${firstLine}`) + (isUsage ? ` (see ${[this.config.bin, ...(this.id ?? '').split(':')].join(' ').trim()} --help)` : '') + '\n')
    if (debug && err.stack) process.stderr.write(`${err.stack}\n`)
    else if (!(err instanceof IpamError) && !isUsage) process.stderr.write('(internal error; re-run with --debug for details)\n')
    process.exitCode = code
    return undefined
  }
}

/** oclif's parse errors span several lines ("The following error occurred:", the reason, a help hint). */
function oneLine(message: string): string {
  return message
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^See more help with/.test(l) && !/^The following errors? occurred:?$/.test(l))
    .join('; ')
    .replace(/^Error: /, '')
}

export const outputFlag = Flags.option({
  char: 'o',
  summary: 'Output format.',
  options: ['table', 'json', 'yaml'] as const,
  default: 'table' as OutputFormat,
})()
