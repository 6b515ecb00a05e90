// Netconf parsing: field types, network name rule, node name priority, datastore settings and identifiers.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {parseCniArgs} from '../../../src/lib/node-ipam/cni-args.ts'
import {allocationAttrs, wepName, workloadIds} from '../../../src/lib/node-ipam/workload-ids.ts'
import {
  DEFAULT_NODENAME_FILE,
  NETWORK_NAME_ERROR,
  parseNetConf,
  validateMainPluginConf,
} from '../../../src/lib/node-ipam/netconf.ts'
import {datastoreSettingsFor} from '../../../src/lib/node-ipam/datastore-settings.ts'
import {determineNodename, requireNodenameFile} from '../../../src/lib/node-ipam/nodename.ts'
import {ValidationError} from '../../../src/lib/errors.ts'

const base = {cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'calico', ipam: {type: 'calico-ipam'}}
const conf = (extra: Record<string, unknown> = {}) => parseNetConf({...base, ...extra})
const noEnv = () => undefined
const envOf = (e: Record<string, string>) => (n: string) => e[n]

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-netconf-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

describe('parseNetConf', () => {
  it('reads the common, ipam and main-plugin fields', () => {
    const c = conf({
      nodename: 'n1',
      mtu: 1440,
      num_queues: 2,
      device_type: 'veth',
      container_settings: {allow_ip_forwarding: true},
      feature_control: {ip_addrs_no_ipam: true},
      ipam: {
        type: 'calico-ipam',
        assign_ipv4: 'false',
        assign_ipv6: 'true',
        ipv4_pools: ['default-ipv4-ippool'],
        ipv6_pools: ['fd00::/48'],
      },
      ipam_lock_file: '/tmp/l',
      datastore_path: '/tmp/x.db',
    })
    assert.equal(c.cniVersion, '1.0.0')
    assert.equal(c.name, 'k8s-pod-network')
    assert.equal(c.ipam.type, 'calico-ipam')
    assert.equal(c.ipam.assignIpv4, 'false')
    assert.equal(c.ipam.assignIpv6, 'true')
    assert.deepEqual(c.ipam.ipv4Pools, ['default-ipv4-ippool'])
    assert.deepEqual(c.ipam.ipv6Pools, ['fd00::/48'])
    assert.equal(c.mtu, 1440)
    assert.equal(c.numQueues, 2)
    assert.equal(c.containerSettings.allowIpForwarding, true)
    assert.equal(c.featureControl.ipAddrsNoIpam, true)
    assert.equal(c.ipamLockFile, '/tmp/l')
    assert.equal(c.datastorePath, '/tmp/x.db')
  })

  it('defaults a missing cniVersion to 0.2.0, as calico does', () => {
    const {cniVersion: _v, ...noVersion} = base
    assert.equal(parseNetConf(noVersion).cniVersion, '0.2.0')
  })

  it('accepts JSON text and treats null as absent', () => {
    const c = parseNetConf(JSON.stringify({...base, mtu: null, nodename: null}))
    assert.equal(c.mtu, 0)
    assert.equal(c.nodename, undefined)
  })

  it("validates the network name with upstream's exact message", () => {
    for (const ok of ['k8s-pod-network', 'net_1.a-b', '_x', '1']) assert.doesNotThrow(() => conf({name: ok}), ok)
    for (const badName of ['bad name', 'net/1', 'net:1', 'ünï', '']) {
      assert.throws(
        () => conf({name: badName}),
        (e: Error) => e instanceof ValidationError && e.message === NETWORK_NAME_ERROR,
        badName,
      )
    }
    assert.equal(
      NETWORK_NAME_ERROR,
      'invalid characters detected in the given network name. Only letters a-z, numbers 0-9, and symbols _.- are supported',
    )
  })

  it('rejects values of the wrong JSON type, naming the field', () => {
    assert.throws(() => conf({mtu: '1500'}), /field "mtu" must be an integer, got string "1500"/)
    assert.throws(() => conf({mtu: 1.5}), /field "mtu" must be an integer/)
    assert.throws(
      () => conf({ipam: {assign_ipv4: false}}),
      /field "ipam.assign_ipv4" must be a string, got boolean false/,
    )
    assert.throws(() => conf({ipam: {ipv4_pools: 'a'}}), /field "ipam.ipv4_pools" must be a list of strings/)
    assert.throws(() => conf({nodename_file_optional: 'yes'}), /field "nodename_file_optional" must be true or false/)
    assert.throws(() => conf({ipam: []}), /field "ipam" must be an object, got array/)
    assert.throws(() => parseNetConf('[1]'), /must be a JSON object/)
  })

  it('keeps the raw object and prevResult for later stages', () => {
    const c = conf({prevResult: {cniVersion: '1.0.0', ips: []}, 'cni.dev/valid-attachments': []})
    assert.deepEqual(c.prevResult, {cniVersion: '1.0.0', ips: []})
    assert.deepEqual(c.raw['cni.dev/valid-attachments'], [])
  })

  it('checks device_type only for the main plugin', () => {
    const c = conf({device_type: 'macvlan'})
    assert.throws(
      () => validateMainPluginConf(c),
      /^ValidationError: unknown device_type "macvlan" in CNI config \(supported: "veth", "netkit"\)$/,
    )
    assert.doesNotThrow(() => validateMainPluginConf(conf({device_type: 'netkit'})))
    assert.doesNotThrow(() => validateMainPluginConf(conf()))
  })
})

describe('determineNodename', () => {
  const files = (m: Record<string, string>) => {
    const seen: string[] = []
    return {
      seen,
      readFile: (f: string) => {
        seen.push(f)
        if (f in m) return m[f]!
        throw Object.assign(new Error('ENOENT'), {code: 'ENOENT'})
      },
      osHostname: () => 'OS-Host',
    }
  }

  it('prefers the nodename field over everything', () => {
    const d = files({[DEFAULT_NODENAME_FILE]: 'from-file'})
    assert.equal(determineNodename(conf({nodename: 'from-conf', hostname: 'h'}), d), 'from-conf')
  })

  it('uses the default nodename file next, trimmed', () => {
    const d = files({[DEFAULT_NODENAME_FILE]: 'node-a\r\n'})
    assert.equal(determineNodename(conf({hostname: 'h'}), d), 'node-a')
    assert.deepEqual(d.seen, ['/var/lib/calico/nodename'])
  })

  it('reads nodename_file when given', () => {
    const d = files({'/etc/custom-nodename': 'node-b'})
    assert.equal(determineNodename(conf({nodename_file: '/etc/custom-nodename'}), d), 'node-b')
  })

  it('falls back to the deprecated hostname field when the file is missing or empty', () => {
    assert.equal(determineNodename(conf({hostname: 'legacy-host'}), files({})), 'legacy-host')
    assert.equal(
      determineNodename(conf({hostname: 'legacy-host'}), files({[DEFAULT_NODENAME_FILE]: ' \n'})),
      'legacy-host',
    )
  })

  it('falls back to the OS host name, lower-cased', () => {
    assert.equal(determineNodename(conf(), files({})), 'os-host')
  })

  it('reads a real file', () => {
    const f = path.join(tmp, 'nodename')
    fs.writeFileSync(f, 'real-node\n')
    assert.equal(determineNodename(conf({nodename_file: f})), 'real-node')
  })

  it('requires the nodename file for the main plugin unless nodename_file_optional', () => {
    assert.throws(
      () => requireNodenameFile(conf({nodename_file: '/nonexistent/nodename'})),
      /^ValidationError: stat \/nonexistent\/nodename: no such file or directory: check that the calico\/node container is running and has mounted \/var\/lib\/calico\/$/,
    )
    assert.doesNotThrow(() =>
      requireNodenameFile(conf({nodename_file: '/nonexistent/nodename', nodename_file_optional: true})),
    )
    assert.doesNotThrow(() => requireNodenameFile(conf({nodename_file: '/x'}), (f) => f === '/x'))
  })
})

describe('datastoreSettingsFor', () => {
  it('defaults to the embedded store at datastore_path', async () => {
    const s = await datastoreSettingsFor(conf({datastore_path: '/tmp/a.db'}), noEnv)
    assert.equal(s.type, 'embedded')
    assert.equal(s.path, '/tmp/a.db')
    assert.equal(s.sources.datastorePath, 'file')
    assert.equal(s.timeoutMs, 10_000)
  })

  it('falls back to the environment, netconf first', async () => {
    const env = envOf({IPAMCTL_DATASTORE_PATH: '/tmp/env.db', DATASTORE_TYPE: 'embedded'})
    assert.equal((await datastoreSettingsFor(conf(), env)).path, '/tmp/env.db')
    assert.equal((await datastoreSettingsFor(conf({datastore_path: '/tmp/conf.db'}), env)).path, '/tmp/conf.db')
  })

  it('selects etcdv3 with its endpoints and TLS files', async () => {
    const s = await datastoreSettingsFor(
      conf({
        datastore_type: 'etcdv3',
        etcd_endpoints: 'https://10.0.0.1:2379, https://10.0.0.2:2379/',
        etcd_key_file: '/k',
        etcd_cert_file: '/c',
        etcd_ca_cert_file: '/ca',
      }),
      noEnv,
    )
    assert.equal(s.type, 'etcdv3')
    assert.deepEqual(s.etcdEndpoints, ['https://10.0.0.1:2379', 'https://10.0.0.2:2379'])
    assert.equal(s.etcdKeyFile, '/k')
    assert.equal(s.etcdCertFile, '/c')
    assert.equal(s.etcdCaCertFile, '/ca')
  })

  it('infers etcdv3 from etcd_endpoints or etcd_authority when datastore_type is absent', async () => {
    assert.equal((await datastoreSettingsFor(conf({etcd_endpoints: 'http://127.0.0.1:2379'}), noEnv)).type, 'etcdv3')
    const a = await datastoreSettingsFor(conf({etcd_authority: '10.1.1.1:2379', etcd_scheme: 'https'}), noEnv)
    assert.equal(a.type, 'etcdv3')
    assert.deepEqual(a.etcdEndpoints, ['https://10.1.1.1:2379'])
    assert.equal(
      (await datastoreSettingsFor(conf({etcd_endpoints: 'http://127.0.0.1:2379', datastore_type: 'embedded'}), noEnv))
        .type,
      'embedded',
    )
  })

  it('takes etcd settings from the environment too', async () => {
    const s = await datastoreSettingsFor(
      conf(),
      envOf({DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: 'http://10.9.9.9:2379'}),
    )
    assert.equal(s.type, 'etcdv3')
    assert.deepEqual(s.etcdEndpoints, ['http://10.9.9.9:2379'])
    assert.equal(s.sources.etcdEndpoints, 'env')
  })

  it('rejects what it cannot serve', async () => {
    await assert.rejects(
      datastoreSettingsFor(conf({datastore_type: 'kubernetes'}), noEnv),
      /kubernetes datastore is not supported/,
    )
    await assert.rejects(
      datastoreSettingsFor(conf({datastore_type: 'consul'}), noEnv),
      /unknown datastore type "consul"/,
    )
    await assert.rejects(
      datastoreSettingsFor(conf({etcd_endpoints: 'ftp://x'}), noEnv),
      /invalid etcd endpoint "ftp:\/\/x"/,
    )
    await assert.rejects(
      datastoreSettingsFor(conf({etcd_discovery_srv: 'example.com'}), noEnv),
      /etcd_discovery_srv is not supported/,
    )
    await assert.rejects(
      datastoreSettingsFor(conf({etcd_endpoints: 'http://a:1', etcd_key_file: '/k'}), noEnv),
      /both etcd_key_file and etcd_cert_file/,
    )
  })

  it('reads a calicoctl-style file only when ipamctl_config names one, netconf fields winning', async () => {
    const cfg = path.join(tmp, 'ipamctl.cfg')
    fs.writeFileSync(
      cfg,
      'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://10.2.2.2:2379\n',
    )
    const s = await datastoreSettingsFor(conf({ipamctl_config: cfg}), noEnv)
    assert.equal(s.type, 'etcdv3')
    assert.deepEqual(s.etcdEndpoints, ['http://10.2.2.2:2379'])
    assert.equal(s.configFile, cfg)
    const o = await datastoreSettingsFor(
      conf({ipamctl_config: cfg, datastore_type: 'embedded', datastore_path: '/tmp/o.db'}),
      noEnv,
    )
    assert.equal(o.type, 'embedded')
    assert.equal(o.path, '/tmp/o.db')
    await assert.rejects(
      datastoreSettingsFor(conf({ipamctl_config: path.join(tmp, 'missing.cfg')}), noEnv),
      /cannot read config file/,
    )
  })
})

describe('identifiers', () => {
  const cmd = {containerId: 'abc123', ifName: 'eth0'}

  it('derives k8s identifiers from the pod arguments', () => {
    const ids = workloadIds(
      conf(),
      cmd,
      parseCniArgs('IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0'),
      'node-1',
    )
    assert.equal(ids.orchestrator, 'k8s')
    assert.equal(ids.handleId, 'k8s-pod-network.abc123')
    assert.equal(ids.workloadId, 'prod.web-0')
    assert.equal(ids.pod, 'web-0')
    assert.equal(ids.namespace, 'prod')
    assert.equal(wepName(ids), 'node--1-k8s-web--0-eth0')
  })

  it('uses the cni orchestrator unless both pod name and namespace are set', () => {
    for (const a of ['', 'K8S_POD_NAME=web-0', 'K8S_POD_NAMESPACE=prod']) {
      const ids = workloadIds(conf(), cmd, parseCniArgs(a), 'node-1')
      assert.equal(ids.orchestrator, 'cni', a)
      assert.equal(ids.namespace, 'default', a)
      assert.equal(ids.pod, '', a)
      assert.equal(ids.workloadId, 'abc123', a)
      assert.equal(wepName(ids), 'node--1-cni-abc123-eth0')
    }
    assert.equal(workloadIds(conf(), cmd, parseCniArgs('CNI_TEST_NAMESPACE=t1'), 'n').namespace, 't1')
  })

  it('builds the allocation attributes', () => {
    const now = new Date('2026-01-02T03:04:05.120Z')
    const k8s = workloadIds(conf(), cmd, parseCniArgs('K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0'), 'node-1')
    assert.deepEqual(allocationAttrs(k8s, now), {
      node: 'node-1',
      timestamp: '2026-01-02 03:04:05.12 +0000 UTC',
      pod: 'web-0',
      namespace: 'prod',
    })
    const cni = workloadIds(conf(), cmd, parseCniArgs(''), 'node-1')
    assert.deepEqual(allocationAttrs(cni, now), {node: 'node-1', timestamp: '2026-01-02 03:04:05.12 +0000 UTC'})
    // The netns marks the allocation as a workload's and tells gc on its node whether it is still alive.
    const withNetns = workloadIds(conf(), {...cmd, netns: '/var/run/netns/t1'}, parseCniArgs(''), 'node-1')
    assert.deepEqual(allocationAttrs(withNetns, now), {
      node: 'node-1',
      timestamp: '2026-01-02 03:04:05.12 +0000 UTC',
      'ipamctl.io/netns': '/var/run/netns/t1',
    })
    const k8sWithNetns = workloadIds(
      conf(),
      {...cmd, netns: '/var/run/netns/t1'},
      parseCniArgs('K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0'),
      'node-1',
    )
    assert.deepEqual(allocationAttrs(k8sWithNetns, now), {
      node: 'node-1',
      timestamp: '2026-01-02 03:04:05.12 +0000 UTC',
      pod: 'web-0',
      namespace: 'prod',
      'ipamctl.io/netns': '/var/run/netns/t1',
    })
  })
})
