// A real three-member etcd cluster (Debian's etcd-server) for tests and benches: members on free loopback ports,
// each with its own data dir under one temporary dir. Members can be killed, frozen (SIGSTOP: connections stay
// open and nothing answers), resumed and restarted. All members are always stopped and the dir removed: by
// stop(), by the after hook of sharedCluster(), and by an exit hook if the run dies first.
import {type ChildProcess, execFile, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before} from 'node:test'
import {ETCD_BIN, ETCDCTL_BIN, freePort} from './etcd-server.ts'

export interface MemberStatus {
  /** etcd's member id (hex, as etcdctl prints it). */
  id: string
  /** The member id this member believes leads; '0' without a leader. */
  leader: string
  raftIndex: number
  raftTerm: number
  dbSize: number
}

export interface ClusterMember {
  readonly name: string
  readonly endpoint: string
  readonly dir: string
  /** The process runs and has not been frozen by pause(). */
  readonly running: boolean
  readonly paused: boolean
  start(): Promise<void>
  /** SIGKILL by default (no clean shutdown; SIGTERM for one); the data dir stays. Resolves once it exited. */
  kill(signal?: NodeJS.Signals): Promise<void>
  /** kill(signal) then start() on the same ports and data. */
  restart(signal?: NodeJS.Signals): Promise<void>
  /** SIGSTOP: a stalled member, not a dead one. */
  pause(): void
  /** SIGCONT. */
  resume(): void
  /** This member's own view (undefined when it does not answer within `timeoutMs`). */
  status(timeoutMs?: number): Promise<MemberStatus | undefined>
  log(): string
}

export interface EtcdCluster {
  readonly members: readonly ClusterMember[]
  /** Every member's client URL, comma-separated, in member order (what ETCD_ENDPOINTS takes). */
  readonly endpoints: string
  readonly dir: string
  /** The member every answering member agrees leads, waiting up to `timeoutMs` for one. */
  waitLeader(timeoutMs?: number, opts?: {not?: ClusterMember}): Promise<ClusterMember>
  /** The current leader as the answering members see it, or undefined. */
  leader(): Promise<ClusterMember | undefined>
  /** Some member that is not `m`. */
  follower(leader: ClusterMember): ClusterMember
  /** etcdctl against the given endpoints (default: all); resolves with stdout. */
  ctl(args: readonly string[], endpoints?: string): Promise<string>
  /** Resume and stop every member, remove the dir. */
  stop(): Promise<void>
}

const live = new Set<ChildProcess>()
const dirs = new Set<string>()
process.on('exit', () => {
  for (const p of live) {
    p.kill('SIGCONT')
    p.kill('SIGKILL')
  }
  for (const d of dirs) fs.rmSync(d, {recursive: true, force: true})
})

function etcdctl(args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      ETCDCTL_BIN,
      args,
      {env: {...process.env, ETCDCTL_API: '3'}, timeout: timeoutMs, encoding: 'utf8'},
      (err, stdout, stderr) =>
        err ? reject(new Error(`etcdctl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    )
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface ClusterOptions {
  /** Where the temporary dir goes (default os.tmpdir(); /dev/shm makes commits cheap). */
  baseDir?: string
  /** --quota-backend-bytes (the default 2 GB is too small for the 550,000-allocation bench). */
  quotaBytes?: number
  extraArgs?: readonly string[]
}

/** Start three members, resolve once they agree on a leader. */
export async function startCluster(opts: ClusterOptions = {}): Promise<EtcdCluster> {
  const dir = fs.mkdtempSync(path.join(opts.baseDir ?? os.tmpdir(), 'ipamctl-etcd-cluster-'))
  dirs.add(dir)
  const names = ['m0', 'm1', 'm2']
  const ports: {client: number; peer: number}[] = []
  for (const _ of names) ports.push({client: await freePort(), peer: await freePort()})
  const initial = names.map((n, i) => `${n}=http://127.0.0.1:${ports[i]!.peer}`).join(',')
  const members: ClusterMember[] = names.map((name, i) => {
    const endpoint = `http://127.0.0.1:${ports[i]!.client}`
    const peer = `http://127.0.0.1:${ports[i]!.peer}`
    const memberDir = path.join(dir, name)
    const args = [
      '--name',
      name,
      '--data-dir',
      memberDir,
      '--listen-client-urls',
      endpoint,
      '--advertise-client-urls',
      endpoint,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      initial,
      '--initial-cluster-state',
      'new',
      '--initial-cluster-token',
      path.basename(dir),
      '--logger',
      'zap',
      '--log-level',
      'error',
      ...(opts.quotaBytes ? ['--quota-backend-bytes', String(opts.quotaBytes)] : []),
      ...(opts.extraArgs ?? []),
    ]
    let child: ChildProcess | undefined
    let log = ''
    let paused = false
    const m: ClusterMember = {
      name,
      endpoint,
      dir: memberDir,
      get running() {
        return child !== undefined && child.exitCode === null && child.signalCode === null && !paused
      },
      get paused() {
        return paused
      },
      async start() {
        if (child && child.exitCode === null && child.signalCode === null) return
        log = ''
        paused = false
        const c = spawn(ETCD_BIN, args, {stdio: ['ignore', 'ignore', 'pipe']})
        c.stderr!.on('data', (d) => {
          // Keep the tail only: a member logs little at error level, but a long run must not grow without bound.
          log = (log + d).slice(-20_000)
        })
        c.once('exit', () => live.delete(c))
        live.add(c)
        child = c
        await sleep(50)
        if (c.exitCode !== null) throw new Error(`etcd ${name} exited with ${c.exitCode}:\n${log}`)
      },
      async kill(signal = 'SIGKILL') {
        const c = child
        if (!c || c.exitCode !== null || c.signalCode !== null) return
        const exited = new Promise((r) => c.once('exit', r))
        c.kill(signal)
        if (paused) c.kill('SIGCONT')
        paused = false
        await exited
      },
      async restart(signal) {
        await m.kill(signal)
        await m.start()
      },
      pause() {
        if (!m.running) return
        child!.kill('SIGSTOP')
        paused = true
      },
      resume() {
        if (!paused) return
        child!.kill('SIGCONT')
        paused = false
      },
      async status(timeoutMs = 1500) {
        if (!m.running) return undefined
        try {
          const out = await etcdctl(
            [
              '--endpoints',
              endpoint,
              '--dial-timeout',
              `${timeoutMs}ms`,
              '--command-timeout',
              `${timeoutMs}ms`,
              'endpoint',
              'status',
              '-w',
              'json',
            ],
            timeoutMs + 1000,
          )
          // Member ids are 64-bit: quote them before JSON.parse so no digit is lost.
          const quoted = out.replace(/"(member_id|leader|cluster_id)":(\d+)/g, '"$1":"$2"')
          const s = (
            JSON.parse(quoted) as {
              Status: {
                header: {member_id: string}
                leader: string
                raftIndex: number
                raftTerm: number
                dbSize: number
              }
            }[]
          )[0]!.Status
          const id = (v: string) => BigInt(v).toString(16)
          return {
            id: id(s.header.member_id),
            leader: id(s.leader),
            raftIndex: s.raftIndex,
            raftTerm: s.raftTerm,
            dbSize: s.dbSize,
          }
        } catch {
          return undefined
        }
      },
      log: () => log,
    }
    return m
  })
  const cluster: EtcdCluster = {
    members,
    endpoints: members.map((m) => m.endpoint).join(','),
    dir,
    async leader() {
      const st = await Promise.all(members.map((m) => m.status()))
      const ids = new Map<string, ClusterMember>()
      for (const [i, s] of st.entries()) if (s) ids.set(s.id, members[i]!)
      const votes = st.filter((s) => s && s.leader !== '0').map((s) => s!.leader)
      // A leader counts when a majority of the cluster names it and it is itself answering.
      for (const v of new Set(votes)) {
        if (votes.filter((x) => x === v).length >= 2 && ids.has(v)) return ids.get(v)
      }
      return undefined
    },
    async waitLeader(timeoutMs = 30_000, o = {}) {
      const until = Date.now() + timeoutMs
      for (;;) {
        const l = await cluster.leader()
        if (l && l !== o.not) return l
        if (Date.now() > until)
          throw new Error(
            `no etcd leader within ${timeoutMs} ms:\n${members.map((m) => `${m.name}: ${m.log()}`).join('\n')}`,
          )
        await sleep(100)
      }
    },
    follower(leader) {
      return members.find((m) => m !== leader)!
    },
    ctl(args, endpoints = cluster.endpoints) {
      return etcdctl(['--endpoints', endpoints, '--dial-timeout', '2s', '--command-timeout', '5s', ...args], 10_000)
    },
    async stop() {
      await Promise.all(members.map((m) => m.kill()))
      fs.rmSync(dir, {recursive: true, force: true})
      dirs.delete(dir)
    },
  }
  try {
    await Promise.all(members.map((m) => m.start()))
    await cluster.waitLeader()
  } catch (err) {
    await cluster.stop()
    throw err
  }
  return cluster
}

/** One cluster for the enclosing describe(): started in its before hook, stopped in its after hook. */
export function sharedCluster(opts: ClusterOptions = {}): {readonly cluster: EtcdCluster} {
  let cluster: EtcdCluster | undefined
  before(async () => {
    cluster = await startCluster(opts)
  })
  after(async () => {
    await cluster?.stop()
  })
  return {
    get cluster() {
      if (!cluster) throw new Error('the etcd cluster did not start')
      return cluster
    },
  }
}
