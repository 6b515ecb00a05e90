// Bad input: one `Error: ` line on stderr, no stack trace, the documented exit status, and the datastore
// byte-for-byte unchanged (compared by dumping every key, value and revision before and after).
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ANSI, assertCleanError, assertRejected, fixture, type Sandbox, sandbox} from './helpers.ts'

// p4 10.0.0.0/24 (blocks /26), p6 fd00::/64 (blocks /122); host h1 holds 10.0.0.10 (handle hA) and has a node record.
const BASE = [
  ['pool', 'create', 'p4', '--cidr', '10.0.0.0/24'],
  ['pool', 'create', 'p6', '--cidr', 'fd00::/64'],
  ['ipam', 'assign', '--host', 'h1', '--ip', '10.0.0.10', '--handle', 'hA'],
] as const
const base = (): Promise<Sandbox> => fixture('base', BASE)

const rejects = (args: string[], status: number, message?: RegExp | string) => async () => {
  await assertRejected(await base(), args, status, message)
}

describe('bad input', {concurrency: true}, () => {
  describe('pool create rejects bad input and writes nothing', {concurrency: true}, () => {
    test(
      'invalid CIDR',
      rejects(['pool', 'create', 'x', '--cidr', 'banana'], 2, /^Error: pool x: invalid CIDR "banana"/),
    )
    test(
      'not strictly masked',
      rejects(['pool', 'create', 'x', '--cidr', '10.1.0.1/24'], 2, 'IPPool CIDR is not strictly masked'),
    )
    test(
      'IPv4 block size 19',
      rejects(
        ['pool', 'create', 'x', '--cidr', '10.16.0.0/16', '--block-size', '19'],
        2,
        'block size 19 is out of range',
      ),
    )
    test(
      'IPv4 block size 33',
      rejects(
        ['pool', 'create', 'x', '--cidr', '10.16.0.0/16', '--block-size', '33'],
        2,
        'block size 33 is out of range',
      ),
    )
    test(
      'IPv6 block size 115',
      rejects(
        ['pool', 'create', 'x', '--cidr', 'fd01::/64', '--block-size', '115'],
        2,
        'block size 115 is out of range',
      ),
    )
    test(
      'pool smaller than its block size',
      rejects(['pool', 'create', 'x', '--cidr', '10.9.0.0/28'], 2, 'smaller than its block size'),
    )
    test(
      'overlapping pool',
      rejects(
        ['pool', 'create', 'x', '--cidr', '10.0.0.0/16'],
        4,
        /^Error: IPPool\(x\) CIDR overlaps with IPPool\(p4\) CIDR 10\.0\.0\.0\/24\n$/,
      ),
    )
    test('IPv4 link-local pool', rejects(['pool', 'create', 'x', '--cidr', '169.254.0.0/16'], 2, 'link-local'))
    test('duplicate name', rejects(['pool', 'create', 'p4', '--cidr', '10.50.0.0/24'], 4, 'IP pool p4 already exists'))
    test(
      'unknown flag',
      rejects(['pool', 'create', 'x', '--cidr', '10.50.0.0/24', '--bogus'], 2, /^Error: Nonexistent flag: --bogus/),
    )
  })

  describe('unknown commands are bad input too', {concurrency: true}, () => {
    test(
      'unknown command',
      rejects(['frobnicate'], 2, /^Error: unknown command "frobnicate" \(see ipamctl --help\)\n$/),
    )
    test(
      'mistyped subcommand: one line with a suggestion',
      rejects(
        ['pool', 'lst'],
        2,
        /^Error: unknown command "pool lst"; did you mean "pool list"\? \(see ipamctl --help\)\n$/,
      ),
    )
  })

  describe('pool create -f rejects a bad manifest and writes nothing', {concurrency: true}, () => {
    const manifest = async (text: string, status: number, message: RegExp | string) => {
      const sb = await base()
      await assertRejected(sb, ['pool', 'create', '-f', sb.file('m.yaml', text)], status, message)
    }
    const doc = (name: string, cidr: string, extra = '') =>
      `apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata:\n  name: ${name}\nspec:\n  cidr: ${cidr}\n${extra}`

    test('YAML syntax error', () => manifest('kind: IPPool\nmetadata: {name: a\nspec: [\n', 2, /m\.yaml/))
    test('unknown spec field', () =>
      manifest(doc('a', '10.60.0.0/24', '  blocksize: 28\n'), 2, 'unknown field spec.blocksize'))
    test('wrong kind', () =>
      manifest(doc('a', '10.60.0.0/24').replace('kind: IPPool', 'kind: Node'), 2, 'kind must be IPPool'))
    test('second document invalid: the first is not created either', () =>
      manifest(`${doc('first', '10.60.0.0/24')}---\n${doc('second', '10.61.0.1/24')}`, 2, /document 2|second/))
  })

  describe('ipam assign rejects bad input and writes nothing', {concurrency: true}, () => {
    test(
      'address outside every pool',
      rejects(
        ['ipam', 'assign', '--host', 'h1', '--ip', '12.0.0.1'],
        2,
        'The provided IP address 12.0.0.1 is not in a configured pool',
      ),
    )
    test(
      'address already assigned',
      rejects(['ipam', 'assign', '--host', 'h1', '--ip', '10.0.0.10'], 4, /already assigned/),
    )
    test(
      'address already assigned, requested by a new host',
      rejects(['ipam', 'assign', '--host', 'h2', '--ip', '10.0.0.10'], 4, /already assigned/),
    )
    test(
      'same address given twice',
      rejects(['ipam', 'assign', '--host', 'h1', '--ip', '10.0.0.20', '--ip', '10.0.0.20'], 2, 'given twice'),
    )
    test(
      'several --ip where a later one is taken: all or nothing',
      rejects(['ipam', 'assign', '--host', 'h1', '--ip', '10.0.0.70', '--ip', '10.0.0.10'], 4, /already assigned/),
    )
    test(
      'unknown pool (known host)',
      rejects(
        ['ipam', 'assign', '--host', 'h1', '--pool', 'nope'],
        3,
        'the given pool (nope) does not exist, or is not enabled',
      ),
    )
    test(
      'unknown pool (new host)',
      rejects(
        ['ipam', 'assign', '--host', 'new-host', '--pool', 'nope'],
        3,
        'the given pool (nope) does not exist, or is not enabled',
      ),
    )
    test(
      'IPv6 pool given for an IPv4-only request',
      rejects(['ipam', 'assign', '--host', 'h1', '--pool', 'p6'], 2, /IPv6/),
    )
    test('nothing requested', rejects(['ipam', 'assign', '--host', 'h1', '--count', '0'], 2, 'nothing to assign'))
  })

  describe('ipam release rejects bad input and releases nothing', {concurrency: true}, () => {
    test('free address', rejects(['ipam', 'release', '--ip', '10.0.0.11'], 3, 'IP address 10.0.0.11 is not assigned'))
    test(
      'two addresses, the second free: the first is NOT released',
      rejects(['ipam', 'release', '--ip', '10.0.0.10', '--ip', '10.0.0.11'], 3, '10.0.0.11 is not assigned'),
    )
    test('unknown handle', rejects(['ipam', 'release', '--handle', 'nope'], 3, 'handle nope not found'))
  })

  describe('ipam configure rejects bad input and writes nothing', {concurrency: true}, () => {
    test(
      'no option',
      rejects(['ipam', 'configure'], 2, /^Error: at least one configuration option must be specified\n$/),
    )
    test('--strictaffinity=maybe', rejects(['ipam', 'configure', '--strictaffinity=maybe'], 2, /strictaffinity/))
    test(
      '--max-blocks-per-host=-1',
      rejects(['ipam', 'configure', '--strictaffinity=true', '--max-blocks-per-host=-1'], 2, /max-blocks-per-host/),
    )
    test(
      '--ip-cooldown-seconds=1201',
      rejects(['ipam', 'configure', '--ip-cooldown-seconds=1201'], 2, /ip-cooldown-seconds/),
    )
    test(
      'max blocks per host without strict affinity',
      rejects(
        ['ipam', 'configure', '--max-blocks-per-host=2'],
        2,
        'MaxBlocksPerHost requires StrictAffinity to be enabled',
      ),
    )
  })

  describe('usage errors say what is wrong', {concurrency: true}, () => {
    test('missing required flag, and mutually exclusive flags', async () => {
      await assertRejected(await base(), ['ipam', 'assign', '--count', '1'], 2, /host/)
      await assertRejected(await base(), ['ipam', 'release'], 2, /--ip|--handle/)
    })
  })

  describe('other failures', {concurrency: true}, () => {
    test('datastore that cannot be opened: exit 5', async () => {
      const sb = sandbox()
      // A path below a regular file (not /proc: Node's recursive mkdir loops forever there).
      const bad = `${sb.file('not-a-dir', '')}/sub/ipam.db`
      assertCleanError(
        await sb.run('pool', 'list', '--datastore-path', bad),
        5,
        `cannot open embedded datastore ${bad}`,
      )
    })

    test('--debug on a failing command prints the stack trace, same exit status, still no write', async () => {
      const sb = await base()
      const before = sb.dump()
      const r = await sb.run('pool', 'create', 'x', '--cidr', '10.1.0.1/24', '--debug')
      assert.equal(r.status, 2)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, /^Error: pool x: .*not strictly masked.*\nValidationError: /)
      assert.match(r.stderr, /^ {4}at /m)
      assert.equal(sb.dump(), before)
    })
  })

  describe('no colour when stderr/stdout are pipes', {concurrency: true}, () => {
    const noAnsi = async (env: Record<string, string | undefined>) => {
      const sb = await base()
      const bad = await sb.runWith({env}, 'ipam', 'release', '--ip', '10.0.0.11')
      assert.equal(bad.status, 3)
      assert.equal(bad.stderr, 'Error: IP address 10.0.0.11 is not assigned\n')
      const good = await sb.runWith({env}, 'ipam', 'show', '--show-blocks')
      assert.equal(good.status, 0)
      assert.match(good.stdout, /^\+-/)
      assert.doesNotMatch(good.stdout + good.stderr, ANSI)
    }
    test('NO_COLOR and FORCE_COLOR unset', () => noAnsi({NO_COLOR: undefined, FORCE_COLOR: undefined}))
    test('NO_COLOR=1', () => noAnsi({NO_COLOR: '1'}))
    test('FORCE_COLOR=1: errors are coloured only on a terminal', async () => {
      const r = await (await base()).runWith(
        {env: {NO_COLOR: undefined, FORCE_COLOR: '1'}},
        'ipam',
        'release',
        '--ip',
        '10.0.0.11',
      )
      assert.equal(r.status, 3)
      assert.equal(r.stderr, 'Error: IP address 10.0.0.11 is not assigned\n')
    })
  })
})
