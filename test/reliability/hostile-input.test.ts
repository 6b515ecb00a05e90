// Hostile and malformed input, table-driven: every case must be refused with ONE clean line (`Error: …`,
// no stack trace) and its documented exit status — or, for the CNI plugins, the CNI error JSON on stdout
// with the right code and exit 1 — and must leave the datastore byte-for-byte unchanged.
//
// All cases share one datastore (a pool per family, one assigned address, a node). They run a few at a time;
// each compares a dump taken before and after, and since no case may write anything, a write by any case
// shows up in some comparison and in the final one.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {ip, tryIp} from '../support/netns.ts'
import {runProcess} from '../support/process.ts'
import {
  assertCleanError,
  ensureBuilt,
  fixture,
  ROOT,
  runCli,
  sandbox,
  type RunResult,
  type Sandbox,
} from '../commands/helpers.ts'

const sb: Sandbox = sandbox()
const NET = 'hostile-net'
const MARKER = path.join(sb.dir, 'pwned')
/** A real, empty network namespace: the main plugin's cases that are not about the netns get past its check. */
const NETNS = `ipamctl-hostile-${process.pid}`
let initial: string
const SETUP = [
  ['pool', 'create', 'p4', '--cidr', '10.0.0.0/24'],
  ['pool', 'create', 'p6', '--cidr', 'fd00::/64'],
  ['ipam', 'assign', '--host', 'h1', '--ip', '10.0.0.10', '--handle', 'hA'],
  ['reservation', 'create', 'r1', '--cidr', '10.0.0.200/30'],
]

before(async () => {
  ensureBuilt()
  for (const step of SETUP) await sb.ok(...step)
  ip('netns', 'add', NETNS)
  initial = sb.dump()
})

after(() => {
  tryIp('netns', 'del', NETNS)
  assert.equal(sb.dump(), initial, 'the shared datastore changed during the hostile-input cases')
  assert.equal(fs.existsSync(MARKER), false, 'an injected command ran')
})

// ---------------------------------------------------------------------------------------------- helpers

const long = (n: number, c = 'a') => c.repeat(n)
/** A file in the sandbox dir (written once, before the case runs). */
const file = (name: string, text: string | Buffer) => {
  const p = path.join(sb.dir, name)
  if (!fs.existsSync(p)) fs.writeFileSync(p, text)
  return p
}
const doc = (name: string, cidr: string, extra = '') =>
  `apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata:\n  name: ${name}\nspec:\n  cidr: ${cidr}\n${extra}`
/** Billion laughs: 9 levels of 9 aliases each. */
const yamlBomb = () => {
  const out = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
  for (let i = 1; i < 9; i++)
    out.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
        .fill(`*${String.fromCharCode(96 + i)}`)
        .join(',')}]`,
    )
  return `${out.join('\n')}\nkind: IPPool\n`
}
const cfg = (spec: string) => `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n${spec}`

interface CliCase {
  name: string
  /** argv, or a function of the sandbox for cases that need files. */
  args: string[] | (() => string[])
  status: number
  message?: RegExp | string
  stdin?: string
  env?: Record<string, string | undefined>
}

// ---------------------------------------------------------------------------------------------- CLI table

const CLI: CliCase[] = [
  // pool create: malformed CIDRs
  ...[
    '10.0.0.0/33',
    '256.1.0.0/16',
    ' 10.1.0.0/24',
    '10.1.0.0/24\n',
    'fd01:::/64',
    'fd01::/129',
    '010.1.0.0/16',
    '10.1.0.0/16;rm -rf /',
    '$(touch pwned)',
  ].map(
    (cidr): CliCase => ({
      name: `pool create --cidr ${JSON.stringify(cidr)}`,
      args: ['pool', 'create', 'x', '--cidr', cidr],
      status: 2,
    }),
  ),
  {name: 'pool create: IPv6 link-local', args: ['pool', 'create', 'x', '--cidr', 'fe80::/64'], status: 2},
  // block sizes and family mix-ups
  ...[
    ['10.16.0.0/16', '-1'],
    ['10.16.0.0/16', '122'],
    ['fd01::/64', '129'],
    ['fd01::/64', '26'],
    ['10.16.0.0/16', '99999999999999999999'],
    ['10.16.0.0/16', '26.5'],
  ].map(
    ([cidr, bs]): CliCase => ({
      name: `pool create ${cidr} --block-size ${bs}`,
      args: ['pool', 'create', 'x', '--cidr', cidr!, '--block-size', bs!],
      status: 2,
    }),
  ),
  // overlaps
  {
    name: 'pool create: overlaps p4 (supernet)',
    args: ['pool', 'create', 'x', '--cidr', '10.0.0.0/16'],
    status: 4,
    message: 'overlaps',
  },
  {
    name: 'pool create: overlaps p6',
    args: ['pool', 'create', 'x', '--cidr', 'fd00::/48'],
    status: 4,
    message: 'overlaps',
  },
  {
    name: 'pool create: everything (covers link-local)',
    args: ['pool', 'create', 'x', '--cidr', '0.0.0.0/0'],
    status: 2,
  },
  // pool names
  ...['a/b', 'a\nb', long(300), '$(touch pwned)'].map(
    (n): CliCase => ({
      name: `pool create name ${JSON.stringify(n.length > 40 ? `${n.slice(0, 10)}…(${n.length})` : n)}`,
      args: ['pool', 'create', n, '--cidr', '10.77.0.0/24'],
      status: 2,
    }),
  ),
  {
    name: 'pool create: bad node selector',
    args: ['pool', 'create', 'x', '--cidr', '10.77.0.0/24', '--node-selector', 'all(('],
    status: 2,
  },

  // pool create -f: manifests
  {
    name: 'manifest: YAML bomb (aliases)',
    args: () => ['pool', 'create', '-f', file('bomb.yaml', yamlBomb())],
    status: 2,
  },
  {
    name: 'manifest: alias cycle / merge bomb',
    args: () => [
      'pool',
      'create',
      '-f',
      file(
        'merge.yaml',
        `base: &b {x: 1}\n${Array.from({length: 200}, (_, i) => `k${i}: {<<: *b}`).join('\n')}\nkind: IPPool\n`,
      ),
    ],
    status: 2,
  },
  {
    name: 'manifest: 5 MB file',
    args: () => [
      'pool',
      'create',
      '-f',
      file('huge.yaml', `${doc('huge', '10.78.0.0/24')}  nodeSelector: "${long(5 * 1024 * 1024, 'x')}"\n`),
    ],
    status: 2,
    message: 'larger than',
  },
  {name: 'manifest: /dev/zero', args: ['pool', 'create', '-f', '/dev/zero'], status: 2},
  {
    name: 'manifest: binary garbage',
    args: () => [
      'pool',
      'create',
      '-f',
      file('garbage.bin', Buffer.from(Array.from({length: 4096}, (_, i) => (i * 131 + 7) % 256))),
    ],
    status: 2,
  },
  {
    name: 'manifest: unknown metadata field',
    args: () => [
      'pool',
      'create',
      '-f',
      file('unk-md.yaml', doc('a', '10.60.0.0/24').replace('metadata:\n', 'metadata:\n  namespace: x\n')),
    ],
    status: 2,
    message: 'unknown field',
  },
  {
    name: 'manifest: name with a slash',
    args: () => ['pool', 'create', '-f', file('slash.yaml', doc('"a/b"', '10.60.0.0/24'))],
    status: 2,
  },
  {
    name: 'manifest: cidr is a number',
    args: () => ['pool', 'create', '-f', file('num.yaml', doc('a', '10'))],
    status: 2,
  },
  {
    name: 'manifest: blockSize is a string',
    args: () => ['pool', 'create', '-f', file('bs-str.yaml', doc('a', '10.60.0.0/24', '  blockSize: "26"\n'))],
    status: 2,
  },
  {
    name: 'manifest: blockSize 1e9',
    args: () => ['pool', 'create', '-f', file('bs-big.yaml', doc('a', '10.60.0.0/16', '  blockSize: 1000000000\n'))],
    status: 2,
  },
  {
    name: 'manifest: two pools overlapping each other',
    args: () => [
      'pool',
      'create',
      '-f',
      file('ovl.yaml', `${doc('o1', '10.62.0.0/24')}---\n${doc('o2', '10.62.0.0/25')}`),
    ],
    status: 4,
  },
  {
    name: 'manifest: overlaps an existing pool',
    args: () => ['pool', 'create', '-f', file('ovl2.yaml', doc('o3', '10.0.0.0/23'))],
    status: 4,
  },
  {
    name: 'manifest: List with a bad item',
    args: () => [
      'pool',
      'create',
      '-f',
      file(
        'listkind.yaml',
        `kind: List\nitems:\n  - ${JSON.stringify({kind: 'IPPool', metadata: {name: 'l1'}, spec: {cidr: 'nope'}})}\n`,
      ),
    ],
    status: 2,
  },
  {
    name: 'manifest: deeply nested',
    args: () => ['pool', 'create', '-f', file('deep.yaml', `${'['.repeat(5000)}${']'.repeat(5000)}\n`)],
    status: 2,
  },
  {name: 'manifest: from stdin, not YAML', args: ['pool', 'create', '-f', '-'], stdin: '{{{{ not: yaml', status: 2},

  // ipam assign
  ...['a/b', 'a\nb', long(300)].map(
    (h): CliCase => ({
      name: `ipam assign --host ${JSON.stringify(h.length > 40 ? `(${h.length} chars)` : h)}`,
      args: ['ipam', 'assign', '--host', h],
      status: 2,
    }),
  ),
  ...['a/b', 'a\nb', long(300)].map(
    (h): CliCase => ({
      name: `ipam assign --handle ${JSON.stringify(h.length > 40 ? `(${h.length} chars)` : h)}`,
      args: ['ipam', 'assign', '--host', 'h1', '--handle', h],
      status: 2,
    }),
  ),
  ...['-1', '99999999999', '65537'].map(
    (n): CliCase => ({
      name: `ipam assign --count ${JSON.stringify(n)}`,
      args: ['ipam', 'assign', '--host', 'h1', '--count', n],
      status: 2,
    }),
  ),
  {name: 'ipam assign --count6 -1', args: ['ipam', 'assign', '--host', 'h1', '--count6', '-1'], status: 2},
  ...['10.0.0.256', '10.0.0.1/32', '::ffff:10.0.0.11', '10.0.0.11 ', '1.2.3.4.5'].map(
    (ip): CliCase => ({
      name: `ipam assign --ip ${JSON.stringify(ip)}`,
      args: ['ipam', 'assign', '--host', 'h1', '--ip', ip],
      status: 2,
    }),
  ),
  {
    name: 'ipam assign --ip outside every pool (v6)',
    args: ['ipam', 'assign', '--host', 'h1', '--ip', 'fd99::1'],
    status: 2,
  },
  {
    name: 'ipam assign --ip reserved by an IPReservation',
    args: ['ipam', 'assign', '--host', 'h1', '--ip', '10.0.0.201'],
    status: 2,
    message: 'reserved',
  },
  {
    name: 'ipam assign: v4 count from a v6 pool',
    args: ['ipam', 'assign', '--host', 'h1', '--count', '1', '--pool', 'p6'],
    status: 2,
  },
  {
    name: 'ipam assign: v6 count from a v4 pool',
    args: ['ipam', 'assign', '--host', 'h1', '--count', '0', '--count6', '1', '--pool', 'p4'],
    status: 2,
  },
  {
    name: 'ipam assign: pool given as a malformed CIDR',
    args: ['ipam', 'assign', '--host', 'h1', '--pool', '10.0.0.0/99'],
    status: 3,
  },
  {name: 'ipam assign: --attr without =', args: ['ipam', 'assign', '--host', 'h1', '--attr', 'novalue'], status: 2},

  // ipam release / show / check / gc / split / configure
  ...['10.0.0.256', '10.0.0.10/32'].map(
    (ip): CliCase => ({
      name: `ipam release --ip ${JSON.stringify(ip)}`,
      args: ['ipam', 'release', '--ip', ip, '--yes'],
      status: 2,
    }),
  ),
  {name: 'ipam release --handle a/b', args: ['ipam', 'release', '--handle', 'a/b', '--yes'], status: 3},
  {name: 'ipam release --handle (300 chars)', args: ['ipam', 'release', '--handle', long(300), '--yes'], status: 3},
  {name: 'ipam release --handle with a newline', args: ['ipam', 'release', '--handle', 'hA\nhB', '--yes'], status: 3},
  {
    name: 'ipam release --from-report not JSON',
    args: () => ['ipam', 'release', '--from-report', file('bad-report.json', '{"allocations": '), '--yes'],
    status: 2,
  },
  {
    name: 'ipam release --from-report /dev/zero',
    args: ['ipam', 'release', '--from-report', '/dev/zero', '--yes'],
    status: 2,
  },
  {name: 'ipam show --ip banana', args: ['ipam', 'show', '--ip', 'banana'], status: 2},
  {
    name: 'ipam check -o into a missing directory',
    args: () => ['ipam', 'check', '-o', path.join(sb.dir, 'no', 'such', 'dir', 'r.json')],
    status: 2,
  },
  {name: 'ipam gc --grace banana', args: ['ipam', 'gc', '--grace', 'banana', '--yes'], status: 2},
  ...['3'].map(
    (n): CliCase => ({name: `ipam split ${n}`, args: ['ipam', 'split', n, '--name', 'p4', '--yes'], status: 2}),
  ),
  {
    name: 'ipam split without the datastore lock',
    args: ['ipam', 'split', '2', '--name', 'p4', '--yes'],
    status: 4,
    message: 'not locked',
  },
  {name: 'ipam configure --ip-cooldown-seconds -1', args: ['ipam', 'configure', '--ip-cooldown-seconds=-1'], status: 2},

  // block, node, reservation
  ...['10.0.0.0/99', 'fd00::/200'].map(
    (b): CliCase => ({name: `block inspect ${JSON.stringify(b)}`, args: ['block', 'inspect', b], status: 2}),
  ),
  ...['a/b', 'a\nb', long(300)].map(
    (n): CliCase => ({
      name: `node create ${JSON.stringify(n.length > 40 ? `(${n.length} chars)` : n)}`,
      args: ['node', 'create', n],
      status: 2,
    }),
  ),
  {name: 'node remove a/b', args: ['node', 'remove', 'a/b', '--yes'], status: 2},
  {
    name: 'reservation create: name with a slash',
    args: ['reservation', 'create', 'r/2', '--cidr', '10.0.0.100/32'],
    status: 2,
  },
  {
    name: 'reservation create: name 300 chars',
    args: ['reservation', 'create', long(300), '--cidr', '10.0.0.100/32'],
    status: 2,
  },

  // global flags, environment and config files
  ...['0'].map((t): CliCase => ({name: `--timeout ${t}`, args: ['ipam', 'show', '--timeout', t], status: 2})),
  {
    name: 'ETCD_ENDPOINTS=ftp://x',
    args: ['ipam', 'show', '--datastore', 'etcdv3'],
    env: {ETCD_ENDPOINTS: 'ftp://127.0.0.1:2379'},
    status: 2,
  },
  {
    name: '--etcd-endpoints with a command',
    args: ['ipam', 'show', '--datastore', 'etcdv3', '--etcd-endpoints', 'http://127.0.0.1:2379;touch pwned'],
    status: 2,
  },
  {name: '--config YAML bomb', args: () => ['ipam', 'show', '--config', file('bomb.cfg', yamlBomb())], status: 2},
  {name: '--config /dev/zero', args: ['ipam', 'show', '--config', '/dev/zero'], status: 2},
  {
    name: '--config with a non-string password',
    args: () => ['ipam', 'show', '--config', file('pw.cfg', cfg('  etcdPassword: [1, 2]\n'))],
    status: 2,
  },
  {
    name: '--datastore-path below a regular file',
    args: () => ['ipam', 'show', '--datastore-path', `${file('regular', '')}/sub/ipam.db`],
    status: 5,
  },
]

// ---------------------------------------------------------------------------------------------- CNI table

type Plugin = 'ipam' | 'cni'

interface CniCase {
  name: string
  plugin: Plugin
  /** CNI_* variables (undefined drops the default). */
  env?: Record<string, string | undefined>
  /** Netconf changes, or raw stdin text. */
  conf?: Record<string, unknown>
  ipam?: Record<string, unknown>
  stdin?: string
  code: number
  msg?: RegExp
}

const regularFile = () => file('not-a-netns', 'x')

const CNI: CniCase[] = [
  // netconf that is not JSON, or not what it must be
  ...(['ipam', 'cni'] as Plugin[]).flatMap((plugin): CniCase[] => [
    {name: `${plugin}: empty stdin`, plugin, stdin: '', code: 6},
    {name: `${plugin}: not JSON`, plugin, stdin: 'cniVersion: 1.0.0', code: 6},
    {name: `${plugin}: truncated JSON`, plugin, stdin: '{"cniVersion":"1.0.0","name":', code: 6},
    {name: `${plugin}: a JSON array`, plugin, stdin: '[1,2]', code: 6},
    {name: `${plugin}: JSON null`, plugin, stdin: 'null', code: 6},
    {name: `${plugin}: binary garbage`, plugin, stdin: '\u0000\u00ff\u0001garbage', code: 6},
    {name: `${plugin}: unsupported cniVersion`, plugin, conf: {cniVersion: '9.9.9'}, code: 1},
    {name: `${plugin}: network name with a slash`, plugin, conf: {name: 'a/b'}, code: 7},
    {name: `${plugin}: network name with a newline`, plugin, conf: {name: 'a\nb'}, code: 7},
    // environment
    {name: `${plugin}: unknown CNI_COMMAND`, plugin, env: {CNI_COMMAND: 'BOGUS'}, code: 4},
    {name: `${plugin}: CNI_CONTAINERID missing`, plugin, env: {CNI_CONTAINERID: undefined}, code: 4},
    {name: `${plugin}: CNI_IFNAME missing`, plugin, env: {CNI_IFNAME: undefined}, code: 4},
    {name: `${plugin}: CNI_NETNS missing`, plugin, env: {CNI_NETNS: undefined}, code: 4},
    {name: `${plugin}: CNI_CONTAINERID with a slash`, plugin, env: {CNI_CONTAINERID: '../../etc'}, code: 4},
    {name: `${plugin}: CNI_CONTAINERID with a command`, plugin, env: {CNI_CONTAINERID: 'a;touch pwned'}, code: 4},
    {name: `${plugin}: CNI_IFNAME of 16 bytes`, plugin, env: {CNI_IFNAME: long(16, 'e')}, code: 4},
    {name: `${plugin}: CNI_IFNAME of 8 characters, 16 bytes`, plugin, env: {CNI_IFNAME: 'éééééééé'}, code: 4},
    {name: `${plugin}: CNI_IFNAME with a slash`, plugin, env: {CNI_IFNAME: 'eth/0'}, code: 4},
    {name: `${plugin}: CNI_IFNAME ..`, plugin, env: {CNI_IFNAME: '..'}, code: 4},
    {name: `${plugin}: CNI_IFNAME with a newline`, plugin, env: {CNI_IFNAME: 'eth0\n'}, code: 4},
    // CNI_ARGS
    {name: `${plugin}: CNI_ARGS unknown key`, plugin, env: {CNI_ARGS: 'FOO=bar'}, code: 999, msg: /unknown args/},
    {name: `${plugin}: CNI_ARGS "; rm -rf /"`, plugin, env: {CNI_ARGS: 'K8S_POD_NAME=a;rm -rf /'}, code: 999},
    {name: `${plugin}: CNI_ARGS with $(..) as a key`, plugin, env: {CNI_ARGS: `$(touch ${MARKER})=1`}, code: 999},
    {name: `${plugin}: CNI_ARGS IP=$(..)`, plugin, env: {CNI_ARGS: `IP=$(touch ${MARKER})`}, code: 999},
    {name: `${plugin}: CNI_ARGS with a newline`, plugin, env: {CNI_ARGS: 'IP=10.0.0.20\nFOO=bar'}, code: 999},
    {name: `${plugin}: CNI_ARGS IgnoreUnknown=maybe`, plugin, env: {CNI_ARGS: 'IgnoreUnknown=maybe'}, code: 999},
    {name: `${plugin}: CNI_ARGS pair without =`, plugin, env: {CNI_ARGS: 'IgnoreUnknown'}, code: 999},
    {name: `${plugin}: CNI_ARGS IP=banana`, plugin, env: {CNI_ARGS: 'IP=banana'}, code: 999},
  ]),
  // IPAM-level input
  {name: 'ipam: IP= outside every pool', plugin: 'ipam', env: {CNI_ARGS: 'IP=12.0.0.1'}, code: 7},
  {name: 'ipam: IP= already assigned', plugin: 'ipam', env: {CNI_ARGS: 'IP=10.0.0.10'}, code: 999},
  {name: 'ipam: nodename with a slash', plugin: 'ipam', conf: {nodename: 'a/b'}, code: 7},
  {name: 'ipam: nodename of 300 characters', plugin: 'ipam', conf: {nodename: long(300)}, code: 7},
  {name: 'ipam: ipv4_pools names an IPv6 pool', plugin: 'ipam', ipam: {ipv4_pools: ['fd00::/64']}, code: 7},
  {name: 'ipam: ipv4_pools is a string', plugin: 'ipam', ipam: {ipv4_pools: '10.0.0.0/24'}, code: 7},
  {name: 'ipam: ipv4_pools unknown pool', plugin: 'ipam', ipam: {ipv4_pools: ['10.99.0.0/24']}, code: 999},
  {
    name: 'ipam: etcd endpoint with a command',
    plugin: 'ipam',
    conf: {datastore_type: 'etcdv3', etcd_endpoints: 'http://127.0.0.1:1;touch pwned', datastore_path: undefined},
    code: 7,
  },
  // main plugin: the pod's namespace and interface
  {
    name: 'cni: netns does not exist',
    plugin: 'cni',
    env: {CNI_NETNS: '/var/run/netns/ipamctl-hostile-none'},
    code: 999,
    msg: /netns/,
  },
  {
    name: 'cni: netns is a regular file',
    plugin: 'cni',
    env: {CNI_NETNS: '@regular'},
    code: 999,
    msg: /not a network namespace/,
  },
  {
    name: 'cni: netns is a directory',
    plugin: 'cni',
    env: {CNI_NETNS: '/tmp'},
    code: 999,
    msg: /not a network namespace/,
  },
  {
    name: 'cni: netns is /dev/null',
    plugin: 'cni',
    env: {CNI_NETNS: '/dev/null'},
    code: 999,
    msg: /not a network namespace/,
  },
  {
    name: 'cni: netns is a mount namespace',
    plugin: 'cni',
    env: {CNI_NETNS: '/proc/self/ns/mnt'},
    code: 999,
    msg: /not a network namespace/,
  },
  {
    name: "cni: netns is the host's, CNI_IFNAME taken (lo)",
    plugin: 'cni',
    env: {CNI_NETNS: '/proc/self/ns/net', CNI_IFNAME: 'lo'},
    code: 999,
    msg: /already exists/,
  },
  {name: 'cni: ipam type with a path', plugin: 'cni', ipam: {type: '../../bin/sh'}, code: 7},
  {name: 'cni: ipam type with a command', plugin: 'cni', ipam: {type: 'host-local;touch pwned'}, code: 7},
  {name: 'cni: unknown device_type', plugin: 'cni', conf: {device_type: 'tap'}, code: 7},
]

// ---------------------------------------------------------------------------------------------- running

function cniEnv(c: CniCase): NodeJS.ProcessEnv {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: 'hostile0',
    CNI_NETNS: `/var/run/netns/${NETNS}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    ...c.env,
  }
  if (env.CNI_NETNS === '@regular') env.CNI_NETNS = regularFile()
  const out: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v
  return out
}

function cniStdin(c: CniCase, box: Sandbox): string {
  if (c.stdin !== undefined) return c.stdin
  const conf: Record<string, unknown> = {
    cniVersion: '1.0.0',
    name: NET,
    type: c.plugin === 'cni' ? 'ipamctl-cni' : 'ipamctl-ipam',
    nodename: 'h1',
    nodename_file_optional: true,
    datastore_path: box.db,
    ipam_lock_file: path.join(sb.dir, 'ipam.lock'),
    ...c.conf,
    ipam: {type: 'ipamctl-ipam', ...c.ipam},
  }
  return JSON.stringify(conf)
}

async function runCni(c: CniCase, box: Sandbox): Promise<RunResult> {
  const bin = path.join(ROOT, 'bin', c.plugin === 'cni' ? 'ipamctl-cni.cjs' : 'ipamctl-ipam.cjs')
  const r = await runProcess(process.execPath, [bin], {cwd: sb.dir, env: cniEnv(c), stdin: cniStdin(c, box)})
  return {stdout: r.stdout, stderr: r.stderr, status: r.code}
}

function assertCniError(r: RunResult, c: CniCase): void {
  const ctx = `status ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`
  assert.equal(r.status, 1, ctx)
  let e: {cniVersion?: unknown; code?: unknown; msg?: unknown}
  try {
    e = JSON.parse(r.stdout)
  } catch {
    assert.fail(`stdout is not the CNI error JSON\n${ctx}`)
  }
  assert.equal(typeof e.cniVersion, 'string', ctx)
  assert.equal(e.code, c.code, ctx)
  assert.equal(typeof e.msg, 'string', ctx)
  assert.ok((e.msg as string).length > 0 && !(e.msg as string).includes('\n    at '), ctx)
  if (c.msg) assert.match(e.msg as string, c.msg, ctx)
  assert.doesNotMatch(r.stdout + r.stderr, /^\s+at .+:\d+:\d+\)?$/m, `stack trace\n${ctx}`)
}

// HOSTILE_ISOLATE=1 gives each case its own copy of the datastore (to tell which case wrote what).
const ISOLATE = process.env.HOSTILE_ISOLATE === '1'
const box_ = async (): Promise<Sandbox> => (ISOLATE ? fixture('hostile', SETUP) : sb)
const shortName = (n: string) => n.replace(/\n/g, '\\n')

describe('hostile input is refused cleanly and changes nothing', () => {
  test('the table has at least 100 cases', (t) => {
    t.diagnostic(`${CLI.length} command/manifest cases, ${CNI.length} CNI plugin cases`)
    assert.ok(CLI.length + CNI.length >= 100, `${CLI.length + CNI.length} cases`)
  })

  describe('commands and manifests', {concurrency: 4}, () => {
    for (const c of CLI) {
      test(shortName(c.name), async () => {
        const box = await box_()
        const before = box.dump()
        const args = typeof c.args === 'function' ? c.args() : c.args
        const r = await runCli(box.db, args, {input: c.stdin, env: c.env})
        assertCleanError(r, c.status, c.message)
        assert.equal(box.dump(), before, 'the datastore changed')
      })
    }
  })

  describe('CNI plugins', {concurrency: 4}, () => {
    for (const c of CNI) {
      test(shortName(c.name), async () => {
        const box = await box_()
        const before = box.dump()
        assertCniError(await runCni(c, box), c)
        assert.equal(box.dump(), before, 'the datastore changed')
      })
    }
  })
})
