// Node records are shared with Calico on etcd: relabelling one must not drop what Calico wrote into it.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {upsertNode, withLabels} from '../../../src/lib/ipam/node.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {freshCtx, rawValue, seed} from './helpers.ts'

// A Node record as Calico's node agent writes it: BGP settings, tunnel addresses, annotations and a status.
const CALICO_NODE =
  '{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"node-1","uid":"0b9a1a33-7a4b-4c1e-9d0e-3f0f3c1d2e4f",' +
  '"creationTimestamp":"2026-01-02T03:04:05Z","annotations":{"projectcalico.org/kube-labels":"{}"}},' +
  '"spec":{"bgp":{"ipv4Address":"10.0.0.1/24","ipv4IPIPTunnelAddr":"10.65.0.1"},"ipv4VXLANTunnelAddr":"10.65.0.2",' +
  '"wireguard":{"interfaceIPv4Address":"10.65.0.3"},"orchRefs":[{"nodeName":"node-1","orchestrator":"k8s"}]},' +
  '"status":{"podCIDRs":["10.244.1.0/24"]}}'

describe('node records', () => {
  it('node create on an existing Calico Node record changes its labels and nothing else', async () => {
    const env = await freshCtx()
    await seed(env.store, keys.node('node-1'), CALICO_NODE)
    const r = await upsertNode(env.store, 'node-1', {zone: 'a', rack: 'r1'}, env.clock.now())
    assert.equal(r.created, false)
    const stored = (await rawValue(env.store, keys.node('node-1')))!
    // Labels land where Go writes them (before annotations), sorted; every other byte is the record as it was.
    assert.equal(stored, CALICO_NODE.replace(',"annotations"', ',"labels":{"rack":"r1","zone":"a"},"annotations"'))
    await upsertNode(env.store, 'node-1', {}, env.clock.now())
    assert.equal(await rawValue(env.store, keys.node('node-1')), CALICO_NODE)
  })

  it('withLabels replaces existing labels in place and refuses a record that is not an object', () => {
    const text = '{"kind":"Node","metadata":{"name":"n","labels":{"old":"x"},"uid":"u"},"spec":{"x":1}}'
    assert.equal(
      withLabels(text, {new: 'y'}),
      '{"kind":"Node","metadata":{"name":"n","labels":{"new":"y"},"uid":"u"},"spec":{"x":1}}',
    )
    assert.throws(() => withLabels('[1]', {}), /not a JSON object/)
  })
})
