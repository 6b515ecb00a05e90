// The resource verbs on the embedded store, through the real CLI: a provisioning script that runs twice with the
// store unchanged by the second run, get → edit → apply, every kind round-tripping, and the guards (all or
// nothing, --skip-exists, --skip-not-exists, a stale resourceVersion).
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, sandbox} from './helpers.ts'
import {provisioningScript} from './provisioning.ts'

describe('resource verbs', {concurrency: true}, () => {
  test('a provisioning script runs twice: exit 0 both times, the store unchanged by the second run', async () => {
    const sb = sandbox()
    const file = sb.file('provision.yaml', provisioningScript())
    assert.equal(await sb.ok('apply', '-f', file), 'Successfully applied 16 resource(s): 16 created\n')
    const before = sb.dump()
    assert.equal(await sb.ok('apply', '-f', file), 'Successfully applied 16 resource(s): 16 unchanged\n')
    assert.equal(sb.dump(), before)
    // The same through stdin, and with create --skip-exists.
    assert.equal(
      (await sb.runWith({input: provisioningScript()}, 'apply', '-f', '-')).stdout,
      'Successfully applied 16 resource(s): 16 unchanged\n',
    )
    assert.equal(
      await sb.ok('create', '-f', file, '--skip-exists'),
      'Successfully created 16 resource(s): 16 skipped\n',
    )
    assert.equal(sb.dump(), before)
    // What it made is what the topic commands show.
    assert.match(await sb.ok('ipam', 'show', '--show-configuration'), /MaxBlocksPerHost +\| 8/)
    assert.equal((await sb.ok('get', 'ippools', '-o', 'name')).split('\n').length, 11)
  })

  test('get -o yaml → disabled: true → apply: allocation stops using that pool', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'a', '--cidr', '10.60.0.0/28', '--block-size', '28')
    await sb.ok('pool', 'create', 'b', '--cidr', '10.61.0.0/28', '--block-size', '28')
    assert.match(await sb.ok('ipam', 'assign', '--host', 'h1', '--count', '1'), /^10\.60\.0\.0\n$/)
    const yaml = await sb.ok('get', 'ippool', 'a', '-o', 'yaml')
    assert.match(yaml, /resourceVersion:/)
    assert.doesNotMatch(yaml, /disabled/)
    const edited = yaml.replace('  cidr: 10.60.0.0/28\n', '  cidr: 10.60.0.0/28\n  disabled: true\n')
    assert.equal(
      await sb.ok('apply', '-f', sb.file('a.yaml', edited)),
      "Successfully applied 1 'IPPool' resource(s): 1 configured\n",
    )
    const out = await sb.ok('ipam', 'assign', '--host', 'h2', '--count', '3')
    assert.deepEqual(out.trim().split('\n'), ['10.61.0.0', '10.61.0.1', '10.61.0.2'])
    // The edited file is stale now (its resourceVersion is the old one): replace and apply refuse it.
    await assertRejected(sb, ['replace', '-f', sb.file('a.yaml', edited)], 4, /update conflict: IPPool\(a\)/)
    await assertRejected(sb, ['apply', '-f', sb.file('a.yaml', edited)], 4, /update conflict/)
    // The pool is in use: its CIDR cannot move.
    const moved = (await sb.ok('get', 'ippool', 'a', '-o', 'yaml')).replace('10.60.0.0/28', '10.62.0.0/28')
    await assertRejected(
      sb,
      ['apply', '-f', sb.file('m.yaml', moved)],
      4,
      /CIDR cannot be changed while the pool is in use/,
    )
  })

  test('every kind round-trips: get -o yaml|json (one object or a List) re-applies unchanged', async () => {
    const sb = sandbox()
    await sb.ok('apply', '-f', sb.file('p.yaml', provisioningScript()))
    await sb.ok('ipam', 'assign', '--host', 'node-a', '--count', '2')
    const before = sb.dump()
    for (const kind of ['ippools', 'ipreservations', 'ipamconfigs', 'nodes']) {
      for (const format of ['yaml', 'json']) {
        const all = await sb.ok('get', kind, '-o', format)
        const r = await sb.runWith({input: all}, 'apply', '-f', '-')
        assert.equal(r.status, 0, r.stderr)
        assert.match(r.stdout, /: \d+ unchanged\n$/, `${kind} ${format}: ${r.stdout}`)
        const name = (await sb.ok('get', kind, '-o', 'name')).split('\n')[0]!.split('/')[1]!
        const one = await sb.ok('get', kind, name, '-o', format)
        assert.match((await sb.runWith({input: one}, 'replace', '-f', '-')).stdout, /1 unchanged/)
      }
    }
    assert.equal(sb.dump(), before)
    // BlockAffinity is shown, never written.
    const aff = await sb.ok('get', 'blockaffinities', '-o', 'yaml')
    assert.match(aff, /node: node-a/)
    await assertRejected(sb, ['apply', '-f', sb.file('aff.yaml', aff)], 2, /BlockAffinity is read-only/)
  })

  test('all or nothing: one bad object fails the file (exit 2 or 4) and nothing is written', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'x', '--cidr', '10.50.0.0/24')
    const good = provisioningScript()
    await assertRejected(
      sb,
      [
        'apply',
        '-f',
        sb.file('bad1.yaml', `${good}---\nkind: IPPool\nmetadata: {name: y}\nspec: {cidr: 10.50.0.0/25}\n`),
      ],
      4,
      /overlaps with IPPool\(x\)/,
    )
    await assertRejected(
      sb,
      ['apply', '-f', sb.file('bad2.yaml', good.replace('maxBlocksPerHost: 8', 'maxBlocksPerHost: 8, bogus: 1'))],
      2,
      /unknown field spec.bogus/,
    )
    await assertRejected(
      sb,
      ['apply', '-f', sb.file('bad3.yaml', `${good}---\nkind: Frobnicator\nmetadata: {name: z}\n`)],
      2,
      /unsupported kind "Frobnicator"/,
    )
    await assertRejected(
      sb,
      ['create', '-f', sb.file('dup.yaml', 'kind: IPPool\nmetadata: {name: x}\nspec: {cidr: 10.51.0.0/24}\n')],
      4,
      /resource already exists: IPPool\(x\)/,
    )
    await assertRejected(
      sb,
      ['replace', '-f', sb.file('miss.yaml', 'kind: IPPool\nmetadata: {name: nope}\nspec: {cidr: 10.51.0.0/24}\n')],
      3,
      /resource does not exist: IPPool\(nope\)/,
    )
    await assertRejected(sb, ['get', 'ipool'], 2, /did you mean "ippool"/)
    await assertRejected(sb, ['get', 'ippool', 'nope'], 3, /resource does not exist: IPPool\(nope\)/)
    await assertRejected(sb, ['get', 'ippool', '-o', 'custom-columns=NAME'], 2, /custom-columns/)
  })

  test('delete by name and by file; --skip-not-exists; a missing object fails before anything is deleted', async () => {
    const sb = sandbox()
    const file = sb.file('p.yaml', provisioningScript())
    await sb.ok('apply', '-f', file)
    await assertRejected(sb, ['delete', 'ippool', 'pool-1', 'nope', '--yes'], 3, /IPPool\(nope\)/)
    await assertRejected(sb, ['delete', 'ippool', 'pool-1'], 2, /refusing without confirmation/)
    assert.equal(
      await sb.ok('delete', 'pool', 'pool-1', 'nope', '--skip-not-exists', '--yes'),
      "Successfully deleted 2 'IPPool' resource(s): 1 deleted, 1 skipped\n",
    )
    assert.match(
      await sb.ok('delete', '-f', file, '--skip-not-exists', '--yes'),
      /^Successfully deleted 16 resource\(s\): 15 deleted, 1 skipped\n$/,
    )
    assert.deepEqual(sb.keys('/calico/resources/'), [])
    assert.equal(sb.value('/calico/ipam/v2/config'), undefined)
  })

  test('patch, label and pool update change one field, guarded; outputs wide, name, custom-columns', async () => {
    const sb = sandbox()
    await sb.ok('apply', '-f', sb.file('p.yaml', provisioningScript()))
    assert.match(await sb.ok('patch', 'ippool', 'pool-0', '-p', '{"spec":{"disabled":true}}'), /1 configured/)
    assert.match(await sb.ok('get', 'ippool', 'pool-0', '-o', 'json'), /"disabled": true/)
    assert.match(await sb.ok('label', 'node', 'node-a', 'zone=z1'), /1 configured/)
    await assertRejected(sb, ['label', 'node', 'node-a', 'rack=r9'], 4, /--overwrite/)
    await sb.ok('label', 'node', 'node-a', 'rack=r9', '--overwrite')
    await sb.ok('label', 'node', 'node-a', 'zone-')
    assert.equal(
      await sb.ok('get', 'node', 'node-a', '-o', 'custom-columns=N:.metadata.name,L:.metadata.labels'),
      'N        L\nnode-a   rack=r9\n',
    )
    await assertRejected(
      sb,
      ['patch', 'ippool', 'pool-0', '-p', '{"metadata":{"name":"other"}}'],
      2,
      /cannot be changed/,
    )
    await assertRejected(
      sb,
      ['patch', 'ipamconfig', 'default', '-p', '{"spec":{"maxBlocksPerHost":-3}}'],
      2,
      /maxBlocksPerHost/,
    )
    assert.equal(
      await sb.ok('pool', 'update', 'pool-3', '--node-selector', 'all()', '--label', 'tier-'),
      'IP pool pool-3 (10.103.0.0/24) was updated\n',
    )
    const before = sb.dump()
    assert.match(await sb.ok('pool', 'update', 'pool-3', '--node-selector', 'all()'), /nothing was changed/)
    assert.equal(sb.dump(), before)
    const wide = await sb.ok('get', 'ippool', 'pool-3', '-o', 'wide')
    assert.match(wide, /^NAME +CIDR +NAT +IPIPMODE/)
    assert.match(wide, /pool-3 +10\.103\.0\.0\/24 +false +Never +Never +false +false +all\(\) +Automatic/)
    assert.equal(
      await sb.ok('get', 'ippools', 'pool-3', '-o', 'custom-columns=NAME:.metadata.name,CIDR:.spec.cidr'),
      'NAME     CIDR\npool-3   10.103.0.0/24\n',
    )
  })

  test('reservation create -f; version; help TOPIC', async () => {
    const sb = sandbox()
    const f = sb.file(
      'r.yaml',
      'kind: IPReservation\napiVersion: projectcalico.org/v3\nmetadata: {name: gw}\nspec: {reservedCIDRs: [10.9.0.1]}\n',
    )
    assert.equal(await sb.ok('reservation', 'create', '-f', f), 'Successfully created IP reservation gw\n')
    assert.match(await sb.ok('reservation', 'list'), /gw +10\.9\.0\.1\/32/)
    await assertRejected(sb, ['reservation', 'create', '-f', f], 4, /already exists/)
    assert.match(await sb.ok('version'), /^ipamctl\/\d+\.\d+\.\d+ /)
    assert.equal(await sb.ok('version'), (await sb.run('--version')).stdout)
    assert.match(await sb.ok('help', 'pool'), /Manage IP pools/)
    assert.match(await sb.ok('help', 'pool', 'create'), /USAGE\n {2}\$ ipamctl pool create/)
    await assertRejected(sb, ['help', 'nope'], 2, /no command or topic "nope"/)
  })
})
