// CHECK's datastore half goes through the node's agent when one answers (PluginDatastore.check, POST /v1/check):
// the real `ipamctl agent run` child, and a datastore opener that fails the test if the plugin side opens anything.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {agentCall} from '../../../src/lib/agent-client/client.ts'
import {datastoreId, parseCheck} from '../../../src/lib/agent-client/protocol.ts'
import {CniError} from '../../../src/lib/cni/errors.ts'
import {ValidationError} from '../../../src/lib/errors.ts'
import {PluginDatastore} from '../../../src/lib/node-ipam/plugin-datastore.ts'
import {ipamRequest} from '../../../src/lib/node-ipam/locked-request.ts'
import {wepName} from '../../../src/lib/node-ipam/workload-ids.ts'
import {systemClock} from '../../../src/lib/clock.ts'
import type {DatastoreSettings} from '../../../src/lib/store/settings.ts'
import {encodeWorkloadEndpoint, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {runCli} from '../../commands/helpers.ts'
import {type AgentProc, startAgentProc} from '../../support/agent.ts'

const NODE = 'check-node'

describe('CHECK through the agent', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-check-agent-'))
  const db = path.join(dir, 'ipam.db')
  const socket = path.join(dir, 'agent.sock')
  const settings: DatastoreSettings = {type: 'embedded', path: db, etcdEndpoints: [], timeoutMs: 5000, sources: {}}
  const target = {node: NODE, datastore: datastoreId(settings)}
  let agent: AgentProc
  let address = ''
  const req = ipamRequest(
    {
      command: 'CHECK',
      containerId: 'c1',
      netns: '/var/run/netns/c1',
      ifName: 'eth0',
      args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
      path: '',
      stdinData: Buffer.from(''),
      config: {
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'ipamctl-cni',
        nodename: NODE,
        ipam: {type: 'ipamctl-ipam'},
      },
      cniVersion: '1.0.0',
      getenv: () => undefined,
      log: () => {},
    },
    {lock: false},
  )
  const noDirectOpen = () => Promise.reject(new Error('the datastore was opened directly'))
  const check = (sock: string | undefined, ips?: string[]) =>
    PluginDatastore.using(req, settings, sock, {open: noDirectOpen, clock: systemClock, verb: 'check'}, (ds) =>
      ds.check(req.ids.namespace, wepName(req.ids), ips),
    )

  before(async () => {
    const r = await runCli(db, ['pool', 'create', 'p', '--cidr', '10.201.0.0/24'])
    assert.equal(r.status, 0, r.stderr)
    agent = await startAgentProc(['--node', NODE, '--socket', socket, '--metrics-address', ''], {
      IPAMCTL_DATASTORE_PATH: db,
    })
    const assigned = await agentCall(socket, 'assign', {
      ...target,
      handle: req.ids.handleId,
      attrs: {node: NODE},
      num4: 1,
      num6: 0,
    })
    assert.ok(assigned.kind === 'answered')
    const result = assigned.body.result as {ips: {address: string}[]}
    address = result.ips[0]!.address.split('/')[0]!
    const wep = newWorkloadEndpoint(
      {
        name: wepName(req.ids),
        namespace: 'default',
        orchestrator: 'k8s',
        node: NODE,
        containerID: 'c1',
        pod: 'web-0',
        endpoint: 'eth0',
        ipNetworks: [`${address}/32`],
        interfaceName: 'cali0123456789a',
      },
      new Date(),
    )
    const put = await agentCall(socket, 'endpoint-put', {...target, endpoint: encodeWorkloadEndpoint(wep)})
    assert.equal(put.kind, 'answered')
  })
  after(() => {
    agent?.proc.kill('SIGKILL')
    fs.rmSync(dir, {recursive: true, force: true})
  })

  it('the record and the address comparison come from the agent; nothing is opened directly', async () => {
    const wep = await check(socket, [`${address}/32`])
    assert.equal(wep?.containerID, 'c1')
    assert.deepEqual(wep?.ipNetworks, [`${address}/32`])
    // Without the agent the same call must open the datastore: the opener above refuses, so it fails.
    await assert.rejects(check(undefined, [`${address}/32`]), /opened directly/)
  })

  it('a handle holding other addresses is the IPAM answer, from the agent', async () => {
    await assert.rejects(check(socket, ['10.201.0.250/32']), (err: unknown) => {
      assert.ok(err instanceof CniError)
      assert.match(
        err.msg,
        /^IPAM CHECK failed: handle k8s-pod-network\.c1 holds \[10\.201\.0\.\d+\] but prevResult lists \[10\.201\.0\.250\]$/,
      )
      return true
    })
  })

  it('no record: undefined', async () => {
    const other = ipamRequest(
      {...reqArgs(), containerId: 'c2', args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-9'},
      {lock: false},
    )
    const wep = await PluginDatastore.using(
      other,
      settings,
      socket,
      {open: noDirectOpen, clock: systemClock, verb: 'check'},
      (ds) => ds.check(other.ids.namespace, wepName(other.ids)),
    )
    assert.equal(wep, undefined)
  })

  it('parseCheck: handle and ips come together; names are key segments', () => {
    assert.deepEqual(parseCheck({...target, namespace: 'default', name: 'x'}), {
      ...target,
      namespace: 'default',
      name: 'x',
    })
    assert.throws(() => parseCheck({...target, namespace: 'default', name: 'x', ips: ['10.0.0.1']}), ValidationError)
    assert.throws(() => parseCheck({...target, namespace: 'a/b', name: 'x'}), ValidationError)
  })

  function reqArgs() {
    return {
      command: 'CHECK' as const,
      containerId: 'c1',
      netns: '/var/run/netns/c1',
      ifName: 'eth0',
      args: '',
      path: '',
      stdinData: Buffer.from(''),
      config: {
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'ipamctl-cni',
        nodename: NODE,
        ipam: {type: 'ipamctl-ipam'},
      },
      cniVersion: '1.0.0',
      getenv: () => undefined,
      log: () => {},
    }
  }
})
