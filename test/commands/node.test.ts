// `ipamctl node create|list`, and pools' node selectors choosing which nodes use them.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, sandbox} from './helpers.ts'

describe('node', {concurrency: true}, () => {
  test("labels select pools: each labelled node gets its zone's pool, an unlabelled node none", async () => {
    const sb = sandbox()
    assert.equal(await sb.ok('node', 'create', 'n-a', '--label', 'zone=a', '--label', 'rack=r1'), 'Created node n-a\n')
    assert.equal(await sb.ok('node', 'create', 'n-b', '--label', 'zone=b'), 'Created node n-b\n')
    await sb.ok('pool', 'create', 'zone-a', '--cidr', '10.70.0.0/26', '--node-selector', 'zone == "a"')
    await sb.ok('pool', 'create', 'zone-b', '--cidr', '10.71.0.0/26', '--node-selector', 'zone == "b"')
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'n-a', '--count', '2'), '10.70.0.0\n10.70.0.1\n')
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'n-b'), '10.71.0.0\n')
    const r = await sb.run('ipam', 'assign', '--host', 'plain')
    assert.equal(r.status, 3, r.stderr)
    assert.equal(r.stdout, '')
    assert.equal(r.stderr, 'Error: no configured Calico pools for node plain (IPv4)\n')
    assert.deepEqual(sb.keys('/calico/ipam/v2/host/plain/'), [])

    // A failed assignment changes nothing, not even the node records (first use that succeeds creates one).
    assert.equal(
      await sb.ok('node', 'list'),
      [
        'NAME   BLOCKS   ADDRESSES   LABELS',
        'n-a    1        2           rack=r1,zone=a',
        'n-b    1        1           zone=b',
        '',
      ].join('\n'),
    )
    const json = JSON.parse(await sb.ok('node', 'list', '-o', 'json'))
    assert.deepEqual(
      json.map((n: {name: string; labels: Record<string, string>}) => [n.name, n.labels]),
      [
        ['n-a', {rack: 'r1', zone: 'a'}],
        ['n-b', {zone: 'b'}],
      ],
    )
    assert.deepEqual(JSON.parse(sb.value('/calico/resources/v3/projectcalico.org/nodes/n-a')!).metadata.labels, {
      rack: 'r1',
      zone: 'a',
    })
  })

  test('node create on an existing node replaces its labels, and the selector follows', async () => {
    const sb = sandbox()
    await sb.ok('node', 'create', 'n1', '--label', 'zone=a')
    await sb.ok('pool', 'create', 'zone-b', '--cidr', '10.72.0.0/26', '--node-selector', 'zone == "b"')
    assert.equal(await sb.ok('node', 'create', 'n1', '--label', 'zone=b'), 'Updated node n1\n')
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'n1'), '10.72.0.0\n')
    await assertRejected(sb, ['node', 'create', 'n1', '--label', 'bad key=x'], 2, 'invalid label key')
  })
})
