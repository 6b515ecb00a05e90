// The shared base of every command: datastore flags, output flag, and the mapping from typed errors to
// one line on stderr plus a documented exit code.
import {Command, Errors, Flags} from '@oclif/core'
import {EXIT_CODES, IpamError} from '../lib/errors.js'
import {describeCommitted, Interrupt} from '../lib/interrupt.js'
import {type Ctx, makeCtx} from '../lib/ipam/context.js'
import {openStore} from '../lib/store/open.js'
import {type DatastoreSettings, DEFAULT_CONFIG_FILE, resolveSettings} from '../lib/store/settings.js'
import type {OpenMode, Store} from '../lib/store/store.js'
import type {OutputFormat} from './render.js'
import {errorStyle} from './style.js'

export interface GlobalFlags {
  datastore?: string
  'etcd-endpoints'?: string
  config?: string
  timeout?: number
  'datastore-path'?: string
}

export abstract class BaseCommand extends Command {
  /**
   * Commands whose operation writes in several transactions set this: SIGINT/SIGTERM then stop the
   * operation at its next checkpoint (see lib/interrupt.ts) instead of killing it between two writes.
   */
  static interruptible = false

  /** Passed to the operation through its Ctx (or directly, for operations without one). */
  protected readonly interrupt = new Interrupt()

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    const it = this.interrupt
    if (!it.armed || it.signal) {
      // Nothing written yet, or a second signal: stop at once, saying what is known to be committed.
      const what = !it.armed
        ? 'nothing was changed'
        : `stopped at once: ${describeCommitted(it.lastCommitted)}; a transaction in flight may also have been committed`
      process.stderr.write(`${errorStyle(`Error: interrupted by ${signal}: ${what}`)}\n`)
      process.exit(EXIT_CODES.interrupted)
    }
    it.request(signal)
  }

  override async init(): Promise<void> {
    await super.init()
    if ((this.constructor as typeof BaseCommand).interruptible) {
      process.on('SIGINT', this.onSignal)
      process.on('SIGTERM', this.onSignal)
    }
  }

  static override baseFlags = {
    datastore: Flags.string({
      summary: 'Datastore type: embedded (default) or etcdv3. Env: DATASTORE_TYPE.',
      options: ['embedded', 'etcdv3'],
      helpGroup: 'GLOBAL',
    }),
    'etcd-endpoints': Flags.string({
      summary:
        'Comma-separated etcd URLs, e.g. https://10.0.0.1:2379; selects etcdv3 unless a datastore type is given. Env: ETCD_ENDPOINTS.',
      helpGroup: 'GLOBAL',
    }),
    config: Flags.string({
      summary: `calicoctl-style config file (default ${DEFAULT_CONFIG_FILE} if present). Env: IPAMCTL_CONFIG.`,
      helpGroup: 'GLOBAL',
    }),
    timeout: Flags.integer({summary: 'Seconds any one datastore request may take (default 10).', helpGroup: 'GLOBAL'}),
    'datastore-path': Flags.string({
      summary:
        'Embedded datastore file (default: $IPAMCTL_DATASTORE_PATH, /var/lib/ipamctl/ipam.db for root, else $XDG_DATA_HOME/ipamctl/ipam.db).',
      helpGroup: 'GLOBAL',
    }),
    debug: Flags.boolean({summary: 'Show stack traces for errors.', helpGroup: 'GLOBAL'}),
  }

  /**
   * What this command does with the datastore (see OpenMode): declared once per command class that opens
   * one, so that a read never creates a store and only commands that add state create a missing one.
   */
  static storeMode?: OpenMode

  protected settings(flags: GlobalFlags, opts: {bothTypes?: boolean} = {}): DatastoreSettings {
    return resolveSettings(
      {
        datastore: flags.datastore,
        etcdEndpoints: flags['etcd-endpoints'],
        config: flags.config,
        timeout: flags.timeout,
        datastorePath: flags['datastore-path'],
      },
      process.env,
      opts,
    )
  }

  /** Open a datastore; `mode` defaults to the command's declared storeMode. */
  protected async openStore(settings: DatastoreSettings, mode: OpenMode = this.storeMode()): Promise<Store> {
    const store = await openStore(settings, {
      mode,
      onCreated: (file) => process.stderr.write(`created new datastore at ${file}\n`),
    })
    this.stores.push(store)
    return store
  }

  private storeMode(): OpenMode {
    const mode = (this.constructor as typeof BaseCommand).storeMode
    if (!mode) throw new Error(`internal: command ${this.id} opens a datastore but declares no storeMode`)
    return mode
  }

  private readonly stores: Store[] = []

  protected async ctx(flags: GlobalFlags): Promise<Ctx> {
    return makeCtx(await this.openStore(this.settings(flags)), {interrupt: this.interrupt})
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    process.off('SIGINT', this.onSignal)
    process.off('SIGTERM', this.onSignal)
    const signal = this.interrupt.signal
    if (signal && !err && process.exitCode === undefined) {
      // The signal came during the operation's last transaction, which completed: say so, and still let the
      // caller see that it was interrupted.
      process.stderr.write(
        `${errorStyle(`Error: interrupted by ${signal} after the command had completed: nothing is half-done`)}\n`,
      )
      process.exitCode = EXIT_CODES.interrupted
    }
    // Always close: an open etcd client keeps the process alive.
    await Promise.allSettled(this.stores.map((s) => s.close()))
    return super.finally(err)
  }

  /**
   * This very command line (as `ipamctl …`, shell-quoted) plus `extra` flags it lacks: how an interrupted
   * operation whose steps are all idempotent is finished.
   */
  protected commandLine(extra: readonly string[] = []): string {
    const args = [...this.argv, ...extra.filter((f) => !this.argv.includes(f))]
    return ['ipamctl', ...(this.id ?? '').split(':'), ...args].map(shellQuote).join(' ')
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
    process.stderr.write(
      errorStyle(`Error: ${firstLine}`) +
        (isUsage ? ` (see ${[this.config.bin, ...(this.id ?? '').split(':')].join(' ').trim()} --help)` : '') +
        '\n',
    )
    if (debug && err.stack) process.stderr.write(`${err.stack}\n`)
    else if (!(err instanceof IpamError) && !isUsage)
      process.stderr.write('(internal error; re-run with --debug for details)\n')
    process.exitCode = code
    return undefined
  }
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`
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
