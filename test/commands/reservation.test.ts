// `ipamctl reservation create|list|delete`, run as the real binary, and the reserved column of `ipam show`.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {parse as parseYaml} from 'yaml'
import {assertRejected, sandbox} from './helpers.ts'

const KEY = '/calico/resources/v3/projectcalico.org/ipreservations/'

describe('reservation', {concurrency: true}, () => {
  test('create, list as table/json/yaml, delete --yes', async () => {
    const sb = sandbox()
    assert.equal(
      await sb.ok('reservation', 'create', 'gw', '--cidr', '10.65.0.1', '--cidr', '10.65.1.0/24'),
      'Successfully created IP reservation gw (10.65.0.1/32, 10.65.1.0/24)\n',
    )
    assert.equal(
      await sb.ok('reservation', 'create', 'v6', '--cidr', 'fd80::1'),
      'Successfully created IP reservation v6 (fd80::1/128)\n',
    )
    assert.equal(
      await sb.ok('reservation', 'list'),
      ['NAME   CIDRS', 'gw     10.65.0.1/32,10.65.1.0/24', 'v6     fd80::1/128', ''].join('\n'),
    )
    const json = JSON.parse(await sb.ok('reservation', 'list', '-o', 'json'))
    assert.equal(json.length, 2)
    assert.equal(json[0].kind, 'IPReservation')
    assert.equal(json[0].apiVersion, 'projectcalico.org/v3')
    assert.equal(json[0].metadata.name, 'gw')
    assert.match(json[0].metadata.uid, /^[0-9a-f-]{36}$/)
    assert.deepEqual(json[0].spec, {reservedCIDRs: ['10.65.0.1/32', '10.65.1.0/24']})
    // Stored exactly as the resource (wire compatibility with Calico).
    assert.deepEqual(JSON.parse(sb.value(`${KEY}gw`)!), json[0])
    const yaml = parseYaml(await sb.ok('reservation', 'list', '-o', 'yaml'))
    assert.deepEqual(yaml[1].spec, {reservedCIDRs: ['fd80::1/128']})

    assert.equal(await sb.ok('reservation', 'delete', 'gw', '--yes'), 'Successfully deleted IP reservation gw\n')
    assert.deepEqual(sb.keys(KEY), [`${KEY}v6`])
  })

  test('bad input is rejected cleanly and changes nothing', async () => {
    const sb = sandbox()
    await sb.ok('reservation', 'create', 'gw', '--cidr', '10.65.0.0/30')
    await assertRejected(
      sb,
      ['reservation', 'create', 'bad', '--cidr', '10.65.0.0/33'],
      2,
      'invalid CIDR "10.65.0.0/33"',
    )
    await assertRejected(sb, ['reservation', 'create', 'bad', '--cidr', 'nope'], 2, 'reservation bad:')
    await assertRejected(sb, ['reservation', 'create', 'Bad_Name', '--cidr', '10.0.0.1'], 2, 'invalid reservation name')
    await assertRejected(
      sb,
      ['reservation', 'create', 'gw', '--cidr', '10.66.0.0/30'],
      4,
      'IP reservation gw already exists',
    )
    await assertRejected(sb, ['reservation', 'delete', 'nope', '--yes'], 3, 'IP reservation nope not found')
    await assertRejected(
      sb,
      ['reservation', 'delete', 'gw'],
      2,
      /^Error: Delete IP reservation gw \(10\.65\.0\.0\/30\): refusing without confirmation; pass --yes to confirm\n$/,
    )
  })

  test('ipam show counts reserved addresses; ipam assign refuses a reserved address', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'a', '--cidr', '10.40.0.0/26')
    await sb.ok('ipam', 'assign', '--host', 'node-1', '--count', '5')
    // .0-.3 are allocated already (they stay); .60-.63 are free and become reserved.
    await sb.ok('reservation', 'create', 'r', '--cidr', '10.40.0.0/30', '--cidr', '10.40.0.60/30')
    const out = await sb.ok('ipam', 'show', '--show-blocks')
    assert.match(out, /\| IP Pool {2}\| 10\.40\.0\.0\/26 \| +64 \| +5 \(8%\) \| +8 \(12%\) \| +55 \(86%\) \|/)
    assert.match(out, /\| Block {4}\| 10\.40\.0\.0\/26 \| +64 \| +5 \(8%\) \| +8 \(12%\) \| +55 \(86%\) \|/)
    const [pool] = JSON.parse(await sb.ok('ipam', 'show', '-o', 'json'))
    assert.deepEqual([pool.capacity, pool.inUse, pool.reserved, pool.free], [64, 5, 8, 55])
    await assertRejected(
      sb,
      ['ipam', 'assign', '--host', 'node-1', '--ip', '10.40.0.61'],
      2,
      'IP address 10.40.0.61 is reserved by IPReservation r',
    )
  })
})
