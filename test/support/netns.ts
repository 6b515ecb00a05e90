// ip(8) helpers shared by the tests that build real network namespaces and veths.
import {type ChildProcess, execFileSync, spawn} from 'node:child_process'
import {connect} from 'node:net'

export function ip(...args: string[]): string {
  return execFileSync('ip', args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']})
}

/** The fields of `ip -j` output that tests read; ip(8) prints more, and omits the optional ones when unset. */
export interface IpAddrInfo {
  family: 'inet' | 'inet6'
  local: string
  prefixlen: number
  scope: string
}
export interface IpLink {
  ifindex: number
  ifname: string
  flags: string[]
  mtu: number
  address?: string
  ifalias?: string
}
/** A link in `ip -j addr show` output. */
export interface IpLinkAddrs extends IpLink {
  addr_info: IpAddrInfo[]
}
export interface IpRoute {
  dst: string
  dev?: string
  gateway?: string
  scope?: string
  protocol?: string
  table?: string
  flags: string[]
}
export interface IpNeigh {
  dst: string
  dev?: string
  lladdr?: string
  state?: string[]
}

/** `ip -j <args>` parsed; T names what that listing holds (an empty listing is `[]`). */
export function ipJson<T extends IpLink[] | IpLinkAddrs[] | IpRoute[] | IpNeigh[]>(...args: string[]): T {
  const out = ip('-j', ...args).trim()
  return (out ? JSON.parse(out) : []) as T
}

/** `ip -j <args>` that lists exactly one link (`link show dev X`, `addr show dev X`): that link. */
export function ipLink<T extends IpLink | IpLinkAddrs = IpLink>(...args: string[]): T {
  const links = ipJson<T[]>(...args)
  const [link] = links
  if (links.length !== 1 || link === undefined)
    throw new Error(`ip -j ${args.join(' ')}: ${links.length} links, expected one`)
  return link
}

/** ip(8) where "already gone" is fine (cleanup). */
export function tryIp(...args: string[]): void {
  try {
    ip(...args)
  } catch {
    /* already gone */
  }
}

/** Why netns tests cannot run here, or undefined if they can (probes with a throw-away namespace). */
export function netnsSkipReason(probeName: string): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux network namespaces'
  if (process.getuid?.() !== 0) return 'needs root (creates network namespaces and veths)'
  try {
    ip('netns', 'add', probeName)
  } catch (error) {
    return `\`ip netns add\` does not work here: ${(error as Error).message.split('\n')[0]}`
  }
  tryIp('netns', 'del', probeName)
  return undefined
}

/** A TCP listener inside network namespace `ns` that answers "pong" and closes; resolves once it listens. */
export async function listenInNetns(ns: string, host: string, port: number): Promise<ChildProcess> {
  const code = `require('net').createServer(c=>c.end('pong')).listen(${port},${JSON.stringify(host)},()=>console.log('ready'))`
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', code], {stdio: ['ignore', 'pipe', 'pipe']})
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`listener did not start: ${stderr}`)), 5000)
      child.stdout!.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.on('exit', (c) => reject(new Error(`listener exited ${c}: ${stderr}`)))
    })
  } catch (error) {
    child.kill('SIGKILL')
    throw error
  }
  return child
}

/** Connect to host:port and return everything the peer sent before closing. */
export function tcpExchange(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect({host, port, timeout: 3000})
    let data = ''
    sock.on('data', (d) => (data += d.toString()))
    sock.on('end', () => resolve(data))
    sock.on('timeout', () => sock.destroy(new Error(`timeout connecting to ${host}:${port}`)))
    sock.on('error', reject)
  })
}
