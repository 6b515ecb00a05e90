// An unknown command is bad input like any other: one `Error:` line, exit status 2, with a suggestion when the
// word looks like a typo of a real command. oclif's default is its own ` ›   Error: command pool:foo not found`.
import type {Hook} from '@oclif/core'
import {closest} from '../../lib/format/suggest.js'
import {errorStyle} from '../style.js'

const hook: Hook<'command_not_found'> = async (opts) => {
  const spaced = (id: string) => id.replaceAll(':', ' ')
  const typed = spaced(opts.id)
  const known = opts.config.commands.filter((c) => !c.hidden).map((c) => spaced(c.id))
  const guess = closest(typed, known)
  const hint = guess ? `; did you mean "${guess}"?` : ''
  process.stderr.write(`${errorStyle(`Error: unknown command "${typed}"${hint} (see ${opts.config.bin} --help)`)}\n`)
  process.exitCode = 2
}

export default hook
