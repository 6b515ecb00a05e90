// `ipamctl cni add|del` without --pod: the default container IDs (`ipamctl-<netns name>`) of two namespaces whose
// names share a prefix used to share their first 11 characters, and with them the host veth: the second add
// deleted the first pod's. Needs root and `ip netns`.
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import {describe, test} from 'node:test'
import {sandbox} from './helpers.ts'

const canNetns = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0
const skip = canNetns ? false : 'needs root and ip netns'

const links = (ns: string): string[] =>
  (JSON.parse(execFileSync('ip', ['-n', ns, '-j', 'link', 'show'], {encoding: 'utf8'})) as {ifname: string}[])
    .map((l) => l.ifname)
    .filter((n) => n !== 'lo')

describe('cni add: host veths of plain (non-Kubernetes) pods', {skip}, () => {
  test('two namespaces whose default container IDs share 11 characters: both pods keep eth0 and get their own host veth', async () => {
    const sb = sandbox()
    const nss = [`ipamctl-hv-${process.pid}-a`, `ipamctl-hv-${process.pid}-b`]
    const veths: string[] = []
    try {
      await sb.ok('pool', 'create', 'p', '--cidr', '10.195.7.0/24')
      for (const ns of nss) {
        const out = JSON.parse(await sb.ok('cni', 'add', '--netns', ns, '--create-netns', '--node', 'n1', '-o', 'json'))
        veths.push(out.interfaces[0].name)
      }
      assert.notEqual(veths[0], veths[1])
      for (const ns of nss) assert.deepEqual(links(ns), ['eth0'], `${ns} keeps its eth0`)
      const list = JSON.parse(await sb.ok('cni', 'list', '--node', 'n1', '-o', 'json')) as {interfaceName: string}[]
      assert.deepEqual(list.map((w) => w.interfaceName).sort(), [...veths].sort())
      await sb.ok('cni', 'del', '--netns', nss[0]!, '--node', 'n1')
      assert.deepEqual(links(nss[1]!), ['eth0'], 'deleting the first leaves the second wired')
      await sb.ok('cni', 'del', '--netns', nss[1]!, '--node', 'n1')
    } finally {
      for (const v of veths) spawnSync('ip', ['link', 'del', 'dev', v])
      for (const ns of nss) spawnSync('ip', ['netns', 'del', ns])
    }
  })
})
