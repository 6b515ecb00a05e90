// `--help` for the CLI and each topic lists its commands.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ANSI, sandbox} from './helpers.ts'

const TOPICS: Record<string, string[]> = {
  pool: ['pool create', 'pool delete', 'pool get', 'pool list'],
  ipam: ['ipam assign', 'ipam configure', 'ipam release', 'ipam show'],
  block: ['block inspect', 'block list'],
  node: ['node create', 'node list'],
}

describe('help', {concurrency: true}, () => {
  for (const [topic, commands] of Object.entries(TOPICS)) {
    test(`${topic} --help lists ${commands.join(', ')}`, async () => {
      const r = await sandbox().run(topic, '--help')
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`USAGE\\n {2}\\$ ipamctl ${topic} COMMAND\\n`))
      const listed = [
        ...r.stdout.slice(r.stdout.indexOf('COMMANDS')).matchAll(new RegExp(`^ {2}(${topic} \\w+)`, 'gm')),
      ].map((m) => m[1])
      for (const c of commands) assert.ok(listed.includes(c), `${c} missing from:\n${r.stdout}`)
      assert.doesNotMatch(r.stdout, ANSI)
    })
  }
})
