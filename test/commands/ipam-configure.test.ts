// `ipamctl ipam configure`: success lines, the stored config, show --show-configuration, and the effect of
// strict affinity and the per-host block cap on assignment.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, sandbox} from './helpers.ts'

const CONFIG = '/calico/ipam/v2/config'

describe('ipam configure', {concurrency: true}, () => {
  test('sets several options (Go ParseBool spellings); shown by show --show-configuration and stored Calico-style', async () => {
    const sb = sandbox()
    assert.equal(
      await sb.ok(
        'ipam',
        'configure',
        '--strictaffinity=T',
        '--max-blocks-per-host=2',
        '--ip-cooldown-seconds=30',
        '--kubevirt-ip-persistence=Disabled',
      ),
      [
        'Successfully set StrictAffinity to: true',
        'Successfully set MaxBlocksPerHost to: 2',
        'Successfully set IPCooldownSeconds to: 30',
        'Successfully set KubeVirtVMAddressPersistence to: Disabled',
        '',
      ].join('\n'),
    )
    assert.deepEqual(JSON.parse(sb.value(CONFIG)!), {
      strict_affinity: true,
      auto_allocate_blocks: true,
      maxBlocksPerHost: 2,
      kubeVirtVMAddressPersistence: 'Disabled',
      ipCooldownSeconds: 30,
    })
    assert.equal(
      await sb.ok('ipam', 'show', '--show-configuration'),
      [
        '+------------------------------+----------+',
        '| PROPERTY                     | VALUE    |',
        '+------------------------------+----------+',
        '| StrictAffinity               | true     |',
        '| AutoAllocateBlocks           | true     |',
        '| MaxBlocksPerHost             | 2        |',
        '| KubeVirtVMAddressPersistence | Disabled |',
        '| IPCooldownSeconds            | 30       |',
        '+------------------------------+----------+',
        '',
      ].join('\n'),
    )
    // The cap needs strict affinity: turning it off alone is refused and changes nothing.
    await assertRejected(
      sb,
      ['ipam', 'configure', '--strictaffinity=false'],
      2,
      'MaxBlocksPerHost requires StrictAffinity to be enabled',
    )
    assert.equal(
      await sb.ok('ipam', 'configure', '--strictaffinity=0', '--max-blocks-per-host=0'),
      'Successfully set StrictAffinity to: false\nSuccessfully set MaxBlocksPerHost to: 0\n',
    )
    assert.deepEqual(JSON.parse(await sb.ok('ipam', 'show', '--show-configuration', '-o', 'json')), {
      strictAffinity: false,
      autoAllocateBlocks: true,
      maxBlocksPerHost: 0,
      kubeVirtVMAddressPersistence: 'Disabled',
      ipCooldownSeconds: 30,
    })
  })

  test('--max-blocks-per-host caps the blocks a host claims: partial result, exit 6', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.50.0.0/28', '--block-size', '30')
    await sb.ok('ipam', 'configure', '--strictaffinity=true', '--max-blocks-per-host=1')
    const r = await sb.run('ipam', 'assign', '--host', 'h1', '--count', '6')
    assert.equal(r.status, 6, r.stderr)
    assert.equal(r.stdout.split('\n').filter(Boolean).length, 4)
    assert.match(r.stderr, /^Error: Assigned 4 out of 6 requested IPv4 addresses; .*limit of 1 blocks reached/)
    assert.equal(sb.keys('/calico/ipam/v2/host/h1/').length, 1)
  })

  test("strict affinity: no borrowing from another host's block", async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.52.0.0/26')
    await sb.ok('ipam', 'configure', '--strictaffinity=true')
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'hostA'), '10.52.0.0\n')
    const before = sb.dump()
    const r = await sb.run('ipam', 'assign', '--host', 'hostB')
    assert.equal(r.status, 6, r.stderr)
    assert.equal(r.stdout, '')
    assert.match(
      r.stderr,
      /^Error: Assigned 0 out of 1 requested IPv4 addresses; No more free affine blocks and strict affinity enabled\n$/,
    )
    assert.equal(sb.keys('/calico/ipam/v2/host/hostB/').length, 0)
    assert.equal(
      sb.value('/calico/ipam/v2/assignment/ipv4/block/10.52.0.0-26'),
      before.match(/10\.52\.0\.0-26 @\d+ (.*)/)![1],
    )
  })
})
