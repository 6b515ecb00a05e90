import {BaseCommand} from '../cli/base.js'

export default class Version extends BaseCommand {
  static override summary = 'Print the ipamctl version (the same line as --version).'
  static override examples = ['<%= config.bin %> <%= command.id %>']

  async run(): Promise<void> {
    await this.parse(Version)
    this.out(`${this.config.userAgent}\n`)
  }
}
