// A stand-in "host" for manual pod networking tests: a network namespace the test makes, with lo, a link holding
// the host's addresses (TEST-NET-2 and a ULA), and IPv6 forwarding on (Felix turns it on for a real node; the
// machine running the tests is left alone). The CLI runs inside it through nsenter(1), which switches the network
// namespace only: the pod namespaces `cni add --create-netns` makes stay visible to the test under /var/run/netns.
import {execFileSync, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {ensureBuilt, ROOT, type RunResult} from '../commands/helpers.ts'
import {runProcess} from './process.ts'

const BIN = path.join(ROOT, 'bin', 'run.cjs')

export const HOST_V4 = '198.51.100.1'
export const HOST_V6 = 'fd00:5100::1'

export interface HostNetns {
  name: string
  /** The datastore file the CLI uses. */
  db: string
  /** Where `cni add --create-netns` records the namespaces it made (IPAMCTL_NETNS_RECORD_DIR). */
  recordDir: string
  cli(...args: string[]): Promise<RunResult>
  /** cli(), asserting exit 0 (stderr shown on failure); returns stdout. */
  ok(...args: string[]): Promise<string>
  /** ip(8) inside the host namespace. */
  ip(...args: string[]): string
  /** What a round of add/del must leave unchanged: links, addresses, routes and neighbours (no indexes or timers). */
  snapshot(): string
  close(): void
}

const ipIn = (ns: string, ...args: string[]): string =>
  execFileSync('ip', ['-n', ns, ...args], {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']})

export function netnsToolsSkipReason(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux network namespaces'
  if (process.getuid?.() !== 0) return 'needs root'
  if (spawnSync('ip', ['netns', 'list']).status !== 0) return 'needs ip netns'
  if (spawnSync('nsenter', ['--version']).status !== 0) return 'needs nsenter(1)'
  return undefined
}

export function makeHostNetns(tag: string): HostNetns {
  ensureBuilt()
  const name = `ipamctl-h-${tag}-${process.pid}`
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-hostns-'))
  const db = path.join(dir, 'ipam.db')
  const recordDir = path.join(dir, 'netns-records')
  execFileSync('ip', ['netns', 'add', name])
  ipIn(name, 'link', 'set', 'lo', 'up')
  // A veth pair with both ends here stands in for the host's uplink (this kernel may lack the dummy driver).
  ipIn(name, 'link', 'add', 'h0', 'type', 'veth', 'peer', 'name', 'h0p')
  ipIn(name, 'link', 'set', 'h0p', 'up')
  ipIn(name, 'link', 'set', 'h0', 'up')
  ipIn(name, 'addr', 'add', `${HOST_V4}/32`, 'dev', 'h0')
  ipIn(name, 'addr', 'add', `${HOST_V6}/128`, 'dev', 'h0', 'nodad')
  execFileSync('ip', ['netns', 'exec', name, 'sh', '-c', 'echo 1 > /proc/sys/net/ipv6/conf/all/forwarding'])
  const cli = async (...args: string[]): Promise<RunResult> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      IPAMCTL_DATASTORE_PATH: db,
      IPAMCTL_NETNS_RECORD_DIR: recordDir,
      NO_COLOR: '1',
    }
    delete env.NODE_OPTIONS
    delete env.FORCE_COLOR
    const r = await runProcess('nsenter', [`--net=/var/run/netns/${name}`, process.execPath, BIN, ...args], {
      cwd: ROOT,
      env,
      killAfterMs: 60_000,
    })
    return {stdout: r.stdout, stderr: r.stderr, status: r.code}
  }
  const json = (...args: string[]): unknown => JSON.parse(ipIn(name, '-j', ...args) || '[]')
  return {
    name,
    db,
    recordDir,
    cli,
    async ok(...args) {
      const r = await cli(...args)
      if (r.status !== 0) throw new Error(`ipamctl ${args.join(' ')} failed (${r.status}):\n${r.stderr}${r.stdout}`)
      return r.stdout
    },
    ip: (...args) => ipIn(name, ...args),
    snapshot() {
      const links = (json('link', 'show') as {ifname: string; flags: string[]; mtu: number}[]).map(
        (l) => `${l.ifname} ${l.flags.join(',')} ${l.mtu}`,
      )
      const addrs = (json('addr', 'show') as {ifname: string; addr_info: {local: string; prefixlen: number}[]}[]).map(
        (l) => `${l.ifname} ${l.addr_info.map((a) => `${a.local}/${a.prefixlen}`).join(' ')}`,
      )
      const routes = [
        ...(json('-4', 'route', 'show', 'table', 'all') as object[]),
        ...(json('-6', 'route', 'show', 'table', 'all') as object[]),
      ].map((r) => JSON.stringify(r))
      const neigh = (json('neigh', 'show') as {dst: string; dev: string}[]).map((n) => `${n.dst} ${n.dev}`)
      return [...links, ...addrs, ...routes.sort(), ...neigh.sort()].join('\n')
    },
    close() {
      spawnSync('ip', ['netns', 'del', name])
      fs.rmSync(dir, {recursive: true, force: true})
    },
  }
}

/** Named namespaces on the machine whose names start with `prefix`. */
export function netnsNamed(prefix: string): string[] {
  return execFileSync('ip', ['netns', 'list'], {encoding: 'utf8'})
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((n) => n.startsWith(prefix))
}
