// Named network namespaces that ipamctl makes for manual pod networking (`cni add --create-netns`), and the rule
// that lets it remove them again: a namespace is ipamctl's only if ipamctl created it and recorded it, and only
// while the record still names that very namespace (its nsfs inode). A namespace of the same name made by someone
// else, before or after, is never removed (docs/write-paths.md#cni-plugins-and-manual-wiring).
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {ValidationError} from '../errors.js'
import {DataplaneError} from './errors.js'
import {NETNS_RUN_DIR, openNetns} from './netns.js'
import {socketIn} from './rtnl.js'

/** Where the records live: one file per namespace name. tmpfs, like /var/run/netns, so both vanish on reboot. */
export const DEFAULT_NETNS_RECORD_DIR = '/run/ipamctl/netns'

/** The record directory; IPAMCTL_NETNS_RECORD_DIR moves it (tests). */
export const netnsRecordDir = (): string => process.env.IPAMCTL_NETNS_RECORD_DIR || DEFAULT_NETNS_RECORD_DIR

interface NetnsRecord {
  name: string
  dev: number
  ino: number
  createdAt: string
}

/** A name ip(8) takes as a name: one that starts with "-" would be read as an option. */
export function checkNetnsName(name: string): void {
  if (name.includes('/')) throw new ValidationError('--create-netns needs a netns NAME, not a path')
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/.test(name))
    throw new ValidationError(`invalid netns name ${JSON.stringify(name)}: use letters, digits, "_", "." and "-"`)
}

function identity(name: string): {dev: number; ino: number} | undefined {
  try {
    const st = fs.statSync(path.join(NETNS_RUN_DIR, name))
    return {dev: st.dev, ino: st.ino}
  } catch {
    return undefined
  }
}

const recordFile = (name: string): string => path.join(netnsRecordDir(), name)

function readRecord(name: string): NetnsRecord | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(recordFile(name), 'utf8')) as NetnsRecord
    return typeof r.dev === 'number' && typeof r.ino === 'number' ? r : undefined
  } catch {
    return undefined
  }
}

/**
 * Create the named namespace and record it as ipamctl's. Returns false (nothing done) when it already exists:
 * a namespace found is not ours, and is not recorded.
 */
export function createOwnedNetns(name: string): boolean {
  checkNetnsName(name)
  if (fs.existsSync(path.join(NETNS_RUN_DIR, name))) return false
  try {
    execFileSync('ip', ['netns', 'add', name], {stdio: 'pipe'})
  } catch (err) {
    const text = ((err as {stderr?: Buffer}).stderr?.toString() || (err as Error).message).trim().split('\n')[0]
    throw new DataplaneError(`failed to create netns ${name}: ${text}`)
  }
  const id = identity(name)
  if (!id) throw new DataplaneError(`netns ${name} vanished right after it was created`)
  fs.mkdirSync(netnsRecordDir(), {recursive: true, mode: 0o700})
  const record: NetnsRecord = {name, ...id, createdAt: new Date().toISOString()}
  fs.writeFileSync(recordFile(name), `${JSON.stringify(record)}\n`, {mode: 0o600})
  return true
}

/** Whether `name` is a namespace ipamctl created and recorded, and still the same one. */
export function isOwnedNetns(name: string): boolean {
  if (name.includes('/')) return false
  const r = readRecord(name)
  const id = identity(name)
  return r !== undefined && id !== undefined && r.dev === id.dev && r.ino === id.ino
}

/** Interfaces in the namespace other than loopback: another attachment still lives there. */
async function busyLinks(name: string): Promise<string[]> {
  const ns = openNetns(name)
  try {
    const sock = socketIn(ns)
    try {
      return (await sock.links()).map((l) => l.ifname ?? '').filter((n) => n !== 'lo')
    } finally {
      sock.close()
    }
  } finally {
    ns.close()
  }
}

export type NetnsRemoval = 'removed' | 'not-ours' | 'busy' | 'absent'

/**
 * Remove the namespace if it is ours (isOwnedNetns) and holds no interface but lo (`force`: even then, for
 * undoing a failed ADD that created it). A stale record (the namespace gone or another one of that name) is
 * dropped; the namespace is then left alone.
 */
export async function removeOwnedNetns(name: string, opts: {force?: boolean} = {}): Promise<NetnsRemoval> {
  if (name.includes('/')) return 'not-ours'
  const r = readRecord(name)
  if (!r) return identity(name) ? 'not-ours' : 'absent'
  if (!isOwnedNetns(name)) {
    fs.rmSync(recordFile(name), {force: true})
    return identity(name) ? 'not-ours' : 'absent'
  }
  if (!opts.force && (await busyLinks(name)).length > 0) return 'busy'
  try {
    execFileSync('ip', ['netns', 'del', name], {stdio: 'pipe'})
  } catch (err) {
    const text = ((err as {stderr?: Buffer}).stderr?.toString() || (err as Error).message).trim().split('\n')[0]
    throw new DataplaneError(`failed to delete netns ${name}: ${text}`)
  }
  fs.rmSync(recordFile(name), {force: true})
  return 'removed'
}
