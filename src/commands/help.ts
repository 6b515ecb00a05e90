import {Args, Help} from '@oclif/core'
import {BaseCommand} from '../cli/base.js'
import {ValidationError} from '../lib/errors.js'

export default class HelpCommand extends BaseCommand {
  static override summary = 'Show help for ipamctl, a topic or a command (ipamctl help pool create).'
  static override examples = [
    '<%= config.bin %> <%= command.id %> pool',
    '<%= config.bin %> <%= command.id %> pool create',
  ]
  static override strict = false
  static override args = {topic: Args.string({description: 'Topic or command, words separated by spaces.'})}

  async run(): Promise<void> {
    const {argv} = await this.parse(HelpCommand)
    const words = (argv as string[]).filter((w) => !w.startsWith('-'))
    const id = words.join(':')
    if (id && !this.config.findCommand(id) && !this.config.topics.some((t) => t.name === id))
      throw new ValidationError(`no command or topic "${words.join(' ')}" (see ${this.config.bin} --help)`)
    await new Help(this.config).showHelp(words)
  }
}
