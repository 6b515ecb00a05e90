// `ipam split --dry-run` prints exactly what the real run prints (under one header line), asks nothing and
// changes nothing; it fails where the real run fails.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture, type Sandbox} from './helpers.ts'

const HEADER = 'Dry run: nothing was changed. Without --dry-run this command would print:\n'
const POOL = ['pool', 'create', 'p', '--cidr', '10.52.0.0/24', '--nat-outgoing']
const locked = (): Promise<Sandbox> =>
  fixture('split-dry-locked', [POOL, ['ipam', 'assign', '--host', 'h1', '--count', '2'], ['datastore', 'lock']])
const unlocked = (): Promise<Sandbox> => fixture('split-dry-unlocked', [POOL])

describe('ipam split --dry-run', {concurrency: true}, () => {
  for (const args of [
    ['4', '--name', 'p'],
    ['2', '--cidr', '10.52.0.0/24'],
  ]) {
    test(`split ${args.join(' ')}: the dry run prints the real run's lines and changes nothing`, async () => {
      const dry = await locked()
      const real = await locked()
      const before = dry.dump()
      assert.equal(real.dump(), before)
      // No --yes and no terminal: a dry run does not ask.
      const predicted = await dry.ok('ipam', 'split', ...args, '--dry-run')
      assert.equal(dry.dump(), before, 'the dry run changed the datastore')
      const done = await real.ok('ipam', 'split', ...args, '--yes')
      assert.notEqual(real.dump(), before)
      assert.equal(predicted, HEADER + done)
      assert.match(done, /^IP Pool p was successfully split into \d smaller pools\.\n/)
    })
  }

  test('fails as the real run does: not locked, bad number, unknown pool', async () => {
    await assertRejected(
      await unlocked(),
      ['ipam', 'split', '2', '--name', 'p', '--dry-run'],
      4,
      'datastore is not locked',
    )
    await assertRejected(
      await locked(),
      ['ipam', 'split', '3', '--name', 'p', '--dry-run'],
      2,
      'not a valid power of 2',
    )
    await assertRejected(
      await locked(),
      ['ipam', 'split', '2', '--name', 'nope', '--dry-run'],
      3,
      'unable to find IP pool',
    )
  })
})
