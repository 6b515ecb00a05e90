// npm run bench:cni: start-to-exit latency of the CNI plugin executables, beside `node -e 0` and beside Debian's
// containernetworking-plugins (host-local; ptp + host-local), all measured side by side in ONE run.
// Prints a Markdown section to paste into BENCHMARKS.md.
//
// Every plugin is started the way a container runtime starts it: a clean environment (PATH + CNI_* variables),
// the netconf on stdin, stdout collected, the exit code checked. Our plugins are started as
// `node bin/ipamctl-*.js` with the same node binary as the `node -e 0` row, so "over node -e 0" is exactly
// what the plugin adds to a bare Node start. The rows are interleaved (one run of every row, then the next
// round) so machine noise spreads evenly over them. Full wiring uses a fresh named netns per run, created
// before the timed ADD and deleted after the timed DEL, with private addresses only (10.194.0.0/16 for
// ipamctl-cni, 10.195.0.0/16 for ptp). Needs root, iproute2 and containernetworking-plugins.
//
// Environment: BENCH_RUNS (default 30); BENCH_BASELINE=<dir> adds rows for another build's bin/ (before/after);
// BENCH_BURST=0 skips the agent burst section (bench/agent-burst.ts, which has its own knobs).
// The "(installed)" rows run the plugins as `ipamctl cni install` installs them (in this run's temp dir).
import {execFileSync, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {install} from '../src/lib/install/install.ts'
import {makeCtx} from '../src/lib/ipam/context.ts'
import {createPools} from '../src/lib/ipam/pool-admin.ts'
import {SqliteStore} from '../src/lib/store/sqlite.ts'
import type {Store} from '../src/lib/store/store.ts'
import {benchCommit, SCALE_SECTION} from './support.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const IPAM_BIN = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')
const CNI_BIN = path.join(ROOT, 'bin', 'ipamctl-cni.cjs')
const CNI_DIR = '/usr/lib/cni'
const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const WARMUP = 3
const NODE = process.execPath
/** This bench's section of BENCHMARKS.md starts with this heading. */
const SECTION = '## Process start: CNI plugins and CLI, start to exit'

function need(cond: boolean, msg: string): void {
  if (!cond) {
    console.error(`cni bench: ${msg}`)
    process.exit(2)
  }
}
need(process.getuid?.() === 0, 'needs root (it creates network namespaces)')
need(
  fs.existsSync(path.join(CNI_DIR, 'host-local')) && fs.existsSync(path.join(CNI_DIR, 'ptp')),
  `no ${CNI_DIR}/host-local or ptp: apt-get install -y containernetworking-plugins`,
)
need(fs.existsSync(path.join(ROOT, 'dist', 'cni', 'ipamctl-ipam.cjs')), 'not built: npm run build')

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cni-bench-'))
const db = path.join(dir, 'ipam.db')
const lockFile = path.join(dir, 'ipam.lock')
const hostLocalDir = path.join(dir, 'host-local')

// ---------------------------------------------------------------------------------------------- running

interface Run {
  ms: number
  code: number | null
  stdout: string
  stderr: string
}

/** Start `cmd args` with exactly `env` (plus PATH), `stdin` on its stdin; wall time from spawn to exit. */
function run(cmd: string, args: readonly string[], env: Record<string, string> = {}, stdin = ''): Run {
  const t = process.hrtime.bigint()
  const r = spawnSync(cmd, args, {
    env: {PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...env},
    input: stdin,
    encoding: 'utf8',
    timeout: 60_000,
  })
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  if (r.error) throw r.error
  return {ms, code: r.status, stdout: r.stdout, stderr: r.stderr}
}

function ok(what: string, r: Run): Run {
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`)
  return r
}

/** ADD must return an address inside `prefix` (e.g. "10.194."). */
function added(what: string, r: Run, prefix: string): Run {
  ok(what, r)
  const ips = (JSON.parse(r.stdout) as {ips?: {address: string}[]}).ips ?? []
  if (!ips.some((i) => i.address.startsWith(prefix)))
    throw new Error(`${what}: no ${prefix}x address in the result: ${r.stdout}`)
  return r
}

const cniEnv = (command: 'ADD' | 'DEL', containerId: string, netns: string): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: containerId,
  CNI_NETNS: netns,
  CNI_IFNAME: 'eth0',
  CNI_PATH: CNI_DIR,
})

// ---------------------------------------------------------------------------------------------- netconfs

const ipamctlConf = (type: 'ipamctl-ipam' | 'ipamctl-cni', extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion: '1.0.0',
    name: `bench-${type}`,
    type,
    nodename: 'bench-node',
    mtu: 1500,
    datastore_path: db,
    ipam_lock_file: lockFile,
    ...extra,
    ipam: {type: 'ipamctl-ipam', ipv4_pools: ['10.194.0.0/16']},
  })
const IPAM_CONF = ipamctlConf('ipamctl-ipam')
const CNI_CONF = ipamctlConf('ipamctl-cni')
// Logging cost (docs/logging.md): the plugin log file at info, against logging off (log_level error: no line).
const LOG_FILE = path.join(dir, 'log', 'cni.log')
const LOGGING = {
  info: {log_level: 'info', log_file_path: LOG_FILE},
  off: {log_level: 'error'},
} as const
const HOST_LOCAL_CONF = JSON.stringify({
  cniVersion: '1.0.0',
  name: 'bench-host-local',
  type: 'host-local',
  ipam: {type: 'host-local', ranges: [[{subnet: '10.196.0.0/16'}]], dataDir: hostLocalDir},
})
const PTP_CONF = JSON.stringify({
  cniVersion: '1.0.0',
  name: 'bench-ptp',
  type: 'ptp',
  ipMasq: false,
  mtu: 1500,
  ipam: {type: 'host-local', ranges: [[{subnet: '10.195.0.0/16'}]], dataDir: hostLocalDir},
})

// ---------------------------------------------------------------------------------------------- namespaces

const live = new Set<string>()
const nsName = (tag: string, i: number) => `ipamctl-bench-${process.pid}-${tag}-${i}`
function nsAdd(name: string): string {
  execFileSync('ip', ['netns', 'add', name], {stdio: 'pipe'})
  live.add(name)
  return `/var/run/netns/${name}`
}
function nsDel(name: string): void {
  try {
    execFileSync('ip', ['netns', 'del', name], {stdio: 'pipe'})
  } catch {
    /* already gone */
  }
  live.delete(name)
}
// ptp turns on net.ipv4.ip_forward for the whole host; put it back as it was.
const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward'
const ipForwardBefore = fs.readFileSync(IP_FORWARD, 'utf8').trim()
function cleanup(): void {
  for (const n of [...live]) nsDel(n)
  try {
    if (fs.readFileSync(IP_FORWARD, 'utf8').trim() !== ipForwardBefore) fs.writeFileSync(IP_FORWARD, ipForwardBefore)
  } catch {
    /* best effort */
  }
  fs.rmSync(dir, {recursive: true, force: true})
}
process.on('exit', cleanup)
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130))

// ---------------------------------------------------------------------------------------------- rows

interface Row {
  label: string
  /** One timed run (round i); untimed setup and teardown happen inside, around `time`. */
  once(i: number, time: (fn: () => Run) => void): void
  ms: number[]
  /** Compared against a target: ms over `node -e 0`. */
  target?: number
  /** Compared against a target: at most this many times `node -e 0`. */
  ratioTarget?: number
}

function row(label: string, once: Row['once'], target?: number): Row {
  return {label, once, ms: [], target}
}

/** The CLI (bin/run.cjs) with `args`, which must succeed. */
const CLI_BIN = path.join(ROOT, 'bin', 'run.cjs')
function cliRow(label: string, args: readonly string[], ratioTarget?: number): Row {
  return {
    ...row(label, (_, time) =>
      time(() => ok(`ipamctl ${args.join(' ')}`, run(NODE, [CLI_BIN, ...args], {NO_COLOR: '1'}))),
    ),
    ratioTarget,
  }
}

/** A pair of rows (ADD, DEL) sharing one container per round. */
function addDel(
  label: string,
  add: (i: number) => Run,
  del: (i: number) => Run,
  target: number | undefined,
  setup?: (i: number) => void,
  teardown?: (i: number) => void,
): Row[] {
  const a = row(`${label} ADD`, () => {}, target)
  const d = row(`${label} DEL`, () => {})
  // The DEL row's `once` does both: ADD timed into `a`, DEL timed into `d`; the ADD row is driven from it.
  d.once = (i, time) => {
    setup?.(i)
    try {
      a.ms.push(ok(`${label} ADD`, add(i)).ms)
      time(() => ok(`${label} DEL`, del(i)))
    } finally {
      teardown?.(i)
    }
  }
  return [a, d]
}

const rows: Row[] = [
  row('`/bin/true` (process spawn alone)', (_, time) => time(() => ok('/bin/true', run('/bin/true', [])))),
  row('`node -e 0`', (_, time) => time(() => ok('node -e 0', run(NODE, ['-e', '0'])))),
  // No CNI_COMMAND: the plugin loads everything, prints its about line and exits. Start-up alone.
  row('`ipamctl-ipam` load only (no CNI_COMMAND)', (_, time) =>
    time(() => ok('ipamctl-ipam about', run(NODE, [IPAM_BIN]))),
  ),
  row('`ipamctl-cni` load only (no CNI_COMMAND)', (_, time) =>
    time(() => ok('ipamctl-cni about', run(NODE, [CNI_BIN]))),
  ),
  cliRow('`ipamctl --version`', ['--version']),
  cliRow('`ipamctl --help`', ['--help'], 2.5),
  cliRow('`ipamctl ipam show` (small embedded store)', ['ipam', 'show', '--datastore-path', db]),
  ...addDel(
    '`ipamctl-ipam`',
    (i) =>
      added(
        'ipamctl-ipam ADD',
        run(NODE, [IPAM_BIN], cniEnv('ADD', `ipam-${i}`, '/var/run/netns/unused'), IPAM_CONF),
        '10.194.',
      ),
    (i) => run(NODE, [IPAM_BIN], cniEnv('DEL', `ipam-${i}`, ''), IPAM_CONF),
    20,
  ),
  ...addDel(
    '`host-local` (Debian, Go)',
    (i) =>
      added(
        'host-local ADD',
        run(path.join(CNI_DIR, 'host-local'), [], cniEnv('ADD', `hl-${i}`, '/var/run/netns/unused'), HOST_LOCAL_CONF),
        '10.196.',
      ),
    (i) => run(path.join(CNI_DIR, 'host-local'), [], cniEnv('DEL', `hl-${i}`, ''), HOST_LOCAL_CONF),
    undefined,
  ),
  ...addDel(
    '`ipamctl-cni` full wiring',
    (i) =>
      added(
        'ipamctl-cni ADD',
        run(NODE, [CNI_BIN], cniEnv('ADD', `cni-${i}`, `/var/run/netns/${nsName('cni', i)}`), CNI_CONF),
        '10.194.',
      ),
    (i) => run(NODE, [CNI_BIN], cniEnv('DEL', `cni-${i}`, `/var/run/netns/${nsName('cni', i)}`), CNI_CONF),
    30,
    (i) => nsAdd(nsName('cni', i)),
    (i) => nsDel(nsName('cni', i)),
  ),
  // Logging at info (stderr and the log file) against off, for both plugins, in the same rounds.
  ...(['info', 'off'] as const).flatMap((level) => [
    ...addDel(
      `\`ipamctl-ipam\` logging ${level}`,
      (i) =>
        added(
          'ipamctl-ipam ADD',
          run(
            NODE,
            [IPAM_BIN],
            cniEnv('ADD', `ipl${level}-${i}`, '/var/run/netns/unused'),
            ipamctlConf('ipamctl-ipam', LOGGING[level]),
          ),
          '10.194.',
        ),
      (i) => run(NODE, [IPAM_BIN], cniEnv('DEL', `ipl${level}-${i}`, ''), ipamctlConf('ipamctl-ipam', LOGGING[level])),
      undefined,
    ),
    ...addDel(
      `\`ipamctl-cni\` full wiring, logging ${level}`,
      (i) =>
        added(
          'ipamctl-cni ADD',
          run(
            NODE,
            [CNI_BIN],
            cniEnv('ADD', `cnl${level}-${i}`, `/var/run/netns/${nsName(`l${level}`, i)}`),
            ipamctlConf('ipamctl-cni', LOGGING[level]),
          ),
          '10.194.',
        ),
      (i) =>
        run(
          NODE,
          [CNI_BIN],
          cniEnv('DEL', `cnl${level}-${i}`, `/var/run/netns/${nsName(`l${level}`, i)}`),
          ipamctlConf('ipamctl-cni', LOGGING[level]),
        ),
      undefined,
      (i) => nsAdd(nsName(`l${level}`, i)),
      (i) => nsDel(nsName(`l${level}`, i)),
    ),
  ]),
  ...addDel(
    '`ptp` + `host-local` (Debian, Go)',
    (i) =>
      added(
        'ptp ADD',
        run(path.join(CNI_DIR, 'ptp'), [], cniEnv('ADD', `ptp-${i}`, `/var/run/netns/${nsName('ptp', i)}`), PTP_CONF),
        '10.195.',
      ),
    (i) =>
      run(path.join(CNI_DIR, 'ptp'), [], cniEnv('DEL', `ptp-${i}`, `/var/run/netns/${nsName('ptp', i)}`), PTP_CONF),
    undefined,
    (i) => nsAdd(nsName('ptp', i)),
    (i) => nsDel(nsName('ptp', i)),
  ),
]

// The plugins as `ipamctl cni install` installs them on a node (src/lib/install/install.ts): exec'd through the CNI
// bin entry (a symlink to `current`, whose bin has a #! line naming the runtime's own copy of node), beside the
// checkout's rows above in the same run. README.md "Installing on nodes" says what is installed.
{
  const installedBin = path.join(dir, 'installed-cni-bin')
  install({
    source: ROOT,
    version: 'bench',
    prefix: path.join(dir, 'installed'),
    dir: installedBin,
    asCalico: false,
    force: false,
    node: NODE,
  })
  const ipamBin = path.join(installedBin, 'ipamctl-ipam')
  const cniBin = path.join(installedBin, 'ipamctl-cni')
  rows.push(
    ...addDel(
      '(installed) `ipamctl-ipam`',
      (i) =>
        added(
          'installed ipamctl-ipam ADD',
          run(ipamBin, [], cniEnv('ADD', `inst-ipam-${i}`, '/var/run/netns/unused'), IPAM_CONF),
          '10.194.',
        ),
      (i) => run(ipamBin, [], cniEnv('DEL', `inst-ipam-${i}`, ''), IPAM_CONF),
      undefined,
    ),
    ...addDel(
      '(installed) `ipamctl-cni` full wiring',
      (i) =>
        added(
          'installed ipamctl-cni ADD',
          run(cniBin, [], cniEnv('ADD', `inst-cni-${i}`, `/var/run/netns/${nsName('inst', i)}`), CNI_CONF),
          '10.194.',
        ),
      (i) => run(cniBin, [], cniEnv('DEL', `inst-cni-${i}`, `/var/run/netns/${nsName('inst', i)}`), CNI_CONF),
      undefined,
      (i) => nsAdd(nsName('inst', i)),
      (i) => nsDel(nsName('inst', i)),
    ),
  )
}

// Optional: another build of ipamctl (a directory with bin/ipamctl-ipam.cjs and bin/ipamctl-cni.cjs, e.g. a copy of
// an older dist/ and bin/ with node_modules linked) measured in the same run, for before/after comparisons.
const BASELINE = process.env.BENCH_BASELINE
if (BASELINE) {
  const ipamBin = path.join(BASELINE, 'bin', 'ipamctl-ipam.cjs')
  const cniBin = path.join(BASELINE, 'bin', 'ipamctl-cni.cjs')
  need(
    fs.existsSync(ipamBin) && fs.existsSync(cniBin),
    `BENCH_BASELINE=${BASELINE} has no bin/ipamctl-ipam.cjs and bin/ipamctl-cni.cjs`,
  )
  rows.push(
    ...addDel(
      '(baseline) `ipamctl-ipam`',
      (i) =>
        added(
          'baseline ipamctl-ipam ADD',
          run(NODE, [ipamBin], cniEnv('ADD', `base-ipam-${i}`, '/var/run/netns/unused'), IPAM_CONF),
          '10.194.',
        ),
      (i) => run(NODE, [ipamBin], cniEnv('DEL', `base-ipam-${i}`, ''), IPAM_CONF),
      undefined,
    ),
    ...addDel(
      '(baseline) `ipamctl-cni` full wiring',
      (i) =>
        added(
          'baseline ipamctl-cni ADD',
          run(NODE, [cniBin], cniEnv('ADD', `base-cni-${i}`, `/var/run/netns/${nsName('base', i)}`), CNI_CONF),
          '10.194.',
        ),
      (i) => run(NODE, [cniBin], cniEnv('DEL', `base-cni-${i}`, `/var/run/netns/${nsName('base', i)}`), CNI_CONF),
      undefined,
      (i) => nsAdd(nsName('base', i)),
      (i) => nsDel(nsName('base', i)),
    ),
  )
}

// Optional: ipamctl-ipam on etcd (loads etcd3 + gRPC), when Debian's etcd-server is installed.
let etcd: {stop(): Promise<void>; version: string} | undefined
{
  const {haveEtcd, startEtcd} = await import('../test/support/etcd-server.ts')
  if (haveEtcd) {
    const server = await startEtcd()
    // The per-node agent (`ipamctl agent run`) for the same node and etcd: the plugin then talks to its socket and loads no etcd3.
    const {startAgentProc} = await import('../test/support/agent.ts')
    const agentSocket = path.join(dir, 'agent.sock')
    const agent = await startAgentProc([
      '--node',
      'bench-node',
      '--socket',
      agentSocket,
      '--metrics-address',
      '',
      '--datastore',
      'etcdv3',
      '--etcd-endpoints',
      server.endpoint,
    ])
    const {EtcdStore} = await import('../src/lib/store/etcd.ts')
    const store: Store = await EtcdStore.connect({endpoints: [server.endpoint], timeoutMs: 30_000})
    await createPools(makeCtx(store), [{name: 'bench', cidr: '10.194.0.0/16', blockSize: 26}])
    await store.close()
    etcd = {
      stop: async () => {
        agent.proc.kill('SIGTERM')
        await agent.exited
        await server.stop()
      },
      version: server.ctl('version').split('\n')[0]!,
    }
    const conf = ipamctlConf('ipamctl-ipam', {datastore_type: 'etcdv3', etcd_endpoints: server.endpoint})
    const agentConf = ipamctlConf('ipamctl-ipam', {
      datastore_type: 'etcdv3',
      etcd_endpoints: server.endpoint,
      ipamctl_agent_socket: agentSocket,
    })
    const cniConf = ipamctlConf('ipamctl-cni', {datastore_type: 'etcdv3', etcd_endpoints: server.endpoint})
    const cniAgentConf = ipamctlConf('ipamctl-cni', {
      datastore_type: 'etcdv3',
      etcd_endpoints: server.endpoint,
      ipamctl_agent_socket: agentSocket,
    })
    rows.push(
      ...addDel(
        '`ipamctl-ipam` on etcd v3 through the agent',
        (i) =>
          added(
            'ipamctl-ipam agent ADD',
            run(NODE, [IPAM_BIN], cniEnv('ADD', `agent-${i}`, '/var/run/netns/unused'), agentConf),
            '10.194.',
          ),
        (i) => run(NODE, [IPAM_BIN], cniEnv('DEL', `agent-${i}`, ''), agentConf),
        25,
      ),
      ...addDel(
        '`ipamctl-ipam` on etcd v3',
        (i) =>
          added(
            'ipamctl-ipam etcd ADD',
            run(NODE, [IPAM_BIN], cniEnv('ADD', `etcd-${i}`, '/var/run/netns/unused'), conf),
            '10.194.',
          ),
        (i) => run(NODE, [IPAM_BIN], cniEnv('DEL', `etcd-${i}`, ''), conf),
        undefined,
      ),
      // The main plugin on etcd: IPAM and the WorkloadEndpoint through the agent, or both on etcd itself.
      ...[
        ['`ipamctl-cni` full wiring on etcd v3 through the agent', 'cag', cniAgentConf],
        ['`ipamctl-cni` full wiring on etcd v3', 'cet', cniConf],
      ].flatMap(([label, tag, c]) =>
        addDel(
          label!,
          (i) =>
            added(
              `${label} ADD`,
              run(NODE, [CNI_BIN], cniEnv('ADD', `${tag}-${i}`, `/var/run/netns/${nsName(tag!, i)}`), c!),
              '10.194.',
            ),
          (i) => run(NODE, [CNI_BIN], cniEnv('DEL', `${tag}-${i}`, `/var/run/netns/${nsName(tag!, i)}`), c!),
          undefined,
          (i) => nsAdd(nsName(tag!, i)),
          (i) => nsDel(nsName(tag!, i)),
        ),
      ),
    )
  }
}

// ---------------------------------------------------------------------------------------------- the run

{
  const store = SqliteStore.open(db)
  await createPools(makeCtx(store), [{name: 'bench', cidr: '10.194.0.0/16', blockSize: 26}])
  await store.close()
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!
}
const median = (xs: number[]) => quantile(xs, 0.5)

/** What the bins load: their bundles (a stale one fails the rows), with or without a code cache, and when built. */
const BUNDLES = ['dist/cni/ipamctl-ipam.cjs', 'dist/cni/ipamctl-cni.cjs', 'dist/cli-bundle/ipamctl.cjs']
const entries = () =>
  BUNDLES.map(
    (f) => `${f} (${fs.existsSync(path.join(ROOT, `${f}.v8cache`)) ? 'with' : '**without**'} its code cache)`,
  ).join(', ')
const builtAt = () => BUNDLES.map((f) => fs.statSync(path.join(ROOT, f), {throwIfNoEntry: false})?.mtimeMs).join()
const builtBefore = builtAt()
const entriesBefore = entries()

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ')
// Start-up times are what the machine's other work leaves of two cores: wait (up to 2 minutes) for the 1-minute
// load average to settle, e.g. after bench:ipam, rather than measure its tail.
for (const t0 = Date.now(); os.loadavg()[0]! > 1 && Date.now() - t0 < 120_000; )
  await new Promise((r) => setTimeout(r, 2000))
const loadBefore = load()
try {
  // Warm-up rounds (page cache, first block claim, host-local's dir), then the timed rounds.
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const r of rows) r.once(i, (fn) => r.ms.push(fn().ms))
    if (i < WARMUP) for (const r of rows) r.ms.length = 0
  }
} finally {
  await etcd?.stop()
}
const loadAfter = load()
const rebuilt = builtAt() !== builtBefore

const cpus = os.cpus()
const debVersion = (() => {
  try {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not a template
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', 'containernetworking-plugins'], {encoding: 'utf8'})
  } catch {
    return 'unknown version'
  }
})()
const out: string[] = []
const nodeMedian = median(rows.find((r) => r.label === '`node -e 0`')!.ms)

out.push(`${SECTION} (${new Date().toISOString().slice(0, 10)})\n`)
out.push(
  `Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}. ` +
    `Date: ${new Date().toISOString().slice(0, 10)}. Commit: ${benchCommit(ROOT)}. containernetworking-plugins ${debVersion}${etcd ? `, ${etcd.version}` : ''}. ` +
    `${RUNS} runs per row, interleaved; load average (1/5/15 min) ${loadBefore} before, ${loadAfter} after.\n`,
)
out.push(
  [
    'Run with `npm run bench:cni` (bench/cni.bench.ts, part of `npm run bench`; needs root, iproute2 and',
    '`containernetworking-plugins`). Each row is a process started the way a container runtime starts a CNI plugin',
    '(clean environment with the `CNI_*` variables, netconf on stdin) or the way a user starts the CLI, timed from',
    'spawn to exit, with the same `node` as the `node -e 0` row. Rows are interleaved round by round. IPAM rows use an',
    'embedded store in a temp dir; full-wiring rows a fresh `ip netns add` namespace per run, created before the ADD',
    'and deleted after the DEL. Compare rows within one run: `node -e 0` alone moves by ±20 % between runs here.',
    '',
    'How the plugins and the CLI start fast: each is one CommonJS bundle (scripts/bundle-cni.mjs, scripts/bundle-cli.mjs)',
    'run through bin/start.cjs with a V8 code cache trained at build time, from CommonJS bins (no ES-module',
    'loader). The plugins load no oclif, no node:crypto (random ids from /dev/urandom, SHA-1 in JavaScript) and no',
    "etcd3 unless etcd is configured; the main plugin encodes its own rtnetlink messages over the `netlink` package's",
    "socket (not the package's ~240 KB of struct tables); the IPAM plugin talks to the agent through a small native",
    "addon (native/unix-exchange), not node:net. The CLI loads each command's packages (SQLite, netlink, YAML, etcd3)",
    'only when that command runs, and its bundle sorts command ids without building an ICU collator. docs/startup.md',
    'has the gain of each of these.',
    '',
  ].join('\n'),
)
out.push(`The bins ran ${entriesBefore}.${rebuilt ? ' **They were rebuilt during the run**: rerun.' : ''}\n`)
out.push('| what (wall clock, spawn to exit) | median | p90 | over `node -e 0` (median) |')
out.push('|---|---|---|---|')
for (const r of rows) {
  const m = median(r.ms)
  const over = r.label === '`node -e 0`' ? '–' : `${m - nodeMedian >= 0 ? '+' : ''}${(m - nodeMedian).toFixed(1)} ms`
  out.push(`| ${r.label} | ${m.toFixed(1)} ms | ${quantile(r.ms, 0.9).toFixed(1)} ms | ${over} |`)
}
out.push('\nTargets (docs/design.md#performance-targets), on the medians:')
for (const r of rows.filter((x) => x.target !== undefined)) {
  const over = median(r.ms) - nodeMedian
  out.push(
    `- ${r.label} within ${r.target} ms of \`node -e 0\`: ${over.toFixed(1)} ms — ${over <= r.target! ? '**met**' : '**not met**'}`,
  )
}
for (const r of rows.filter((x) => x.ratioTarget !== undefined)) {
  const ratio = median(r.ms) / nodeMedian
  out.push(
    `- ${r.label} at most ${r.ratioTarget} × \`node -e 0\`: ${ratio.toFixed(2)} × — ${ratio <= r.ratioTarget! ? '**met**' : '**not met**'}`,
  )
}
for (const what of ['`ipamctl-ipam` logging', '`ipamctl-cni` full wiring, logging']) {
  const on = rows.find((r) => r.label === `${what} info ADD`)
  const off = rows.find((r) => r.label === `${what} off ADD`)
  if (!on || !off) continue
  const d = median(on.ms) - median(off.ms)
  out.push(
    `- ${what.replace(/,? logging$/, '')} ADD with the log file at info within 1 ms of logging off (docs/logging.md): ${d >= 0 ? '+' : ''}${d.toFixed(1)} ms — ${d <= 1 ? '**met**' : '**not met**'}`,
  )
}
out.push('')

// The agent burst (bench/agent-burst.ts): its own subsection, after the per-process rows. BENCH_BURST=0 skips it.
if (process.env.BENCH_BURST !== '0') {
  const {agentBurst} = await import('./agent-burst.ts')
  const {md} = await agentBurst((s) => console.error(s))
  if (md) out.push(md)
}

console.log(out.join('\n'))
// --write: replace this section of BENCHMARKS.md (from its heading to the scale section or the end; bench/ipam.bench.ts
// writes what is above).
if (process.argv.includes('--write')) {
  const file = path.join(ROOT, 'BENCHMARKS.md')
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''
  const at =
    [old.indexOf(SECTION), old.indexOf('## CNI plugin start-to-exit latency')].find((x) => x >= 0) ?? old.length
  // The scale section after this one (bench/scale.bench.ts writes it) stays as it is.
  const end = old.indexOf(SCALE_SECTION, at)
  fs.writeFileSync(
    file,
    `${old.slice(0, at).trimEnd()}\n\n${out.join('\n').trim()}\n${end >= 0 ? `\n${old.slice(end)}` : ''}`,
  )
  console.error('BENCHMARKS.md updated (the process start section)')
}
