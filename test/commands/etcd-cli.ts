// Shared helpers for the `*etcd*.integration.test.ts` command tests: run the real CLI against a real etcd
// with a fully controlled datastore selection, read etcd back with etcdctl, and check the IPAM data for
// internal consistency.
//
// Every run goes through `Cli.run`, which
//  - clears every datastore environment variable inherited from the machine (DATASTORE_TYPE, ETCD_*,
//    IPAMCTL_CONFIG) before applying the test's own,
//  - passes `--config <empty CalicoAPIConfig file>` unless the test gives --config or IPAMCTL_CONFIG itself,
//    so the machine's /etc/ipamctl/ipamctl.cfg can never take part,
//  - points IPAMCTL_DATASTORE_PATH at a file in a private temp dir (an accidental embedded open lands there).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type {EtcdServer} from '../support/etcd-server.ts'
import {assertCleanError, runCli, type RunResult} from './helpers.ts'

export const DATASTORE_ENV = [
  'DATASTORE_TYPE',
  'ETCD_ENDPOINTS',
  'ETCD_KEY_FILE',
  'ETCD_CERT_FILE',
  'ETCD_CA_CERT_FILE',
  'ETCD_USERNAME',
  'ETCD_PASSWORD',
  'IPAMCTL_CONFIG',
] as const

const dirs: string[] = []
process.on('exit', () => {
  for (const d of dirs) fs.rmSync(d, {recursive: true, force: true})
})

export function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-etcdcli-'))
  dirs.push(d)
  return d
}

/** A calicoctl.cfg document with the given spec. */
export function configText(spec: Record<string, string>, kind = 'CalicoAPIConfig'): string {
  const lines = Object.entries(spec).map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
  return ['apiVersion: projectcalico.org/v3', `kind: ${kind}`, lines.length ? 'spec:' : 'spec: {}', ...lines, ''].join(
    '\n',
  )
}

export interface TimedResult extends RunResult {
  ms: number
}

export interface CliOptions {
  env?: Record<string, string | undefined>
  input?: string
}

export class Cli {
  readonly dir = tempDir()
  /** An empty CalicoAPIConfig: passed as --config by default. */
  readonly emptyConfig = this.file('empty.cfg', configText({}))
  /** The embedded file IPAMCTL_DATASTORE_PATH points at; tests using etcd never create it. */
  readonly db = path.join(this.dir, 'unused.db')

  file(name: string, text: string): string {
    const p = path.join(this.dir, name)
    fs.writeFileSync(p, text)
    return p
  }

  async run(args: readonly string[], opts: CliOptions = {}): Promise<TimedResult> {
    const env: Record<string, string | undefined> = {}
    for (const k of DATASTORE_ENV) env[k] = undefined
    Object.assign(env, opts.env)
    const argv = [...args]
    if (!argv.includes('--config') && env.IPAMCTL_CONFIG === undefined) argv.push('--config', this.emptyConfig)
    const t = Date.now()
    const r = await runCli(this.db, argv, {env, input: opts.input})
    return {...r, ms: Date.now() - t}
  }

  /** Run against etcd selected by flags. */
  etcd(endpoint: string, args: readonly string[], opts: CliOptions = {}): Promise<TimedResult> {
    return this.run([...args, '--datastore', 'etcdv3', '--etcd-endpoints', endpoint], opts)
  }

  /** Like etcd() but asserts exit 0; returns stdout. */
  async ok(endpoint: string, args: readonly string[], opts: CliOptions = {}): Promise<string> {
    const r = await this.etcd(endpoint, args, opts)
    assert.equal(r.status, 0, `ipamctl ${args.join(' ')} failed (${r.status}):\n${r.stderr}${r.stdout}`)
    return r.stdout
  }
}

// ---------------------------------------------------------------------------------------------- etcd reads

export interface EtcdDump {
  /** The store revision at the time of the read. */
  revision: string
  /** key → value, in key order. */
  kvs: Map<string, string>
  /** key → mod_revision. */
  mods: Map<string, string>
}

/** Everything under `prefix`, read with `etcdctl get --prefix -w json` (keys and values are base64 there). */
export function etcdDump(server: EtcdServer, prefix = '/calico/', ...extra: string[]): EtcdDump {
  const out = JSON.parse(server.ctl('get', '--prefix', prefix, '-w', 'json', ...extra)) as {
    header: {revision: number | string}
    kvs?: {key: string; value?: string; mod_revision: number | string}[]
  }
  const kvs = new Map<string, string>()
  const mods = new Map<string, string>()
  for (const kv of out.kvs ?? []) {
    const k = Buffer.from(kv.key, 'base64').toString('utf8')
    kvs.set(k, Buffer.from(kv.value ?? '', 'base64').toString('utf8'))
    mods.set(k, String(kv.mod_revision))
  }
  return {revision: String(out.header.revision), kvs, mods}
}

/** One key's value as etcdctl prints it (undefined when absent). */
export function etcdValue(server: EtcdServer, key: string, ...extra: string[]): string | undefined {
  return etcdDump(server, key, ...extra).kvs.get(key)
}

// ---------------------------------------------------------------------------------------------- addresses

/** An address as a comparable string: "4:<bigint>" or "6:<bigint>". */
export function ipKey(ip: string): string {
  if (ip.includes(':')) {
    const [head, tail] = ip.split('::') as [string, string | undefined]
    const h = head ? head.split(':') : []
    const t = tail ? tail.split(':') : []
    const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h
    assert.equal(groups.length, 8, `bad IPv6 address ${ip}`)
    return `6:${groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n)}`
  }
  const parts = ip.split('.').map(Number)
  assert.equal(parts.length, 4, `bad IPv4 address ${ip}`)
  return `4:${parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n)}`
}

function cidrParts(cidr: string): {family: 4 | 6; base: bigint; prefix: number} {
  const [ip, len] = cidr.split('/') as [string, string]
  const k = ipKey(ip)
  return {family: k.startsWith('6') ? 6 : 4, base: BigInt(k.slice(2)), prefix: Number(len)}
}

// ---------------------------------------------------------------------------------------------- consistency

export interface Consistency {
  problems: string[]
  /** ipKey(address) → handle ID ('' for none), for every allocated address. */
  owners: Map<string, string>
  blocks: number
}

/**
 * Check the IPAM keys of a dump for internal consistency:
 * - every block value parses, its cidr matches its key, allocations/unallocated/attributes agree;
 * - every handle record's counts equal the allocations carrying that handle, block by block, exactly, and
 *   every allocated handle has a record;
 * - every block's host affinity has a confirmed affinity key and every affinity key has its block;
 * - no address is allocated twice.
 */
export function checkConsistency(kvs: Map<string, string>): Consistency {
  const problems: string[] = []
  const owners = new Map<string, string>()
  const counted = new Map<string, Map<string, number>>() // handle → block cidr → count
  const blockAffinity = new Map<string, string>() // "host/ipvN/enc" → present
  let blocks = 0
  for (const [key, value] of kvs) {
    const m = /^\/calico\/ipam\/v2\/assignment\/ipv([46])\/block\/([^/]+)$/.exec(key)
    if (!m) continue
    blocks++
    let b: {
      cidr: string
      affinity: string | null
      hostAffinity?: string
      allocations: (number | null)[]
      unallocated: number[]
      attributes: {handle_id?: string; releasedAt?: string}[] | null
      deleted: boolean
    }
    try {
      b = JSON.parse(value)
    } catch (err) {
      problems.push(`${key}: value is not JSON: ${(err as Error).message}`)
      continue
    }
    const enc = m[2]!
    if (b.cidr.replace('/', '-') !== enc) problems.push(`${key}: cidr ${b.cidr} does not match the key`)
    const {family, base, prefix} = cidrParts(b.cidr)
    if (`${family}` !== m[1]) problems.push(`${key}: family mismatch`)
    const size = 2 ** ((family === 4 ? 32 : 128) - prefix)
    if (!Array.isArray(b.allocations) || b.allocations.length !== size) {
      problems.push(`${key}: ${b.allocations?.length} allocations for a block of ${size}`)
      continue
    }
    const attrs = b.attributes ?? []
    const referenced = new Set<number>()
    const unalloc = new Set<number>()
    for (const o of b.unallocated) {
      if (!Number.isInteger(o) || o < 0 || o >= size)
        problems.push(`${key}: unallocated ordinal ${o} outside the block`)
      if (unalloc.has(o)) problems.push(`${key}: ordinal ${o} twice in unallocated`)
      unalloc.add(o)
    }
    let allocated = 0
    b.allocations.forEach((a, ordinal) => {
      if (a === null) return
      allocated++
      if (unalloc.has(ordinal)) problems.push(`${key}: ordinal ${ordinal} is allocated and also in unallocated`)
      const attr = attrs[a]
      if (!attr) {
        problems.push(`${key}: ordinal ${ordinal} points at missing attribute ${a}`)
        return
      }
      referenced.add(a)
      if (attr.releasedAt) return // cooldown: not owned
      const addr = `${family}:${base + BigInt(ordinal)}`
      if (owners.has(addr)) problems.push(`${key}: address ${addr} allocated twice`)
      const handle = attr.handle_id ?? ''
      owners.set(addr, handle)
      if (handle) {
        const per = counted.get(handle) ?? new Map<string, number>()
        per.set(b.cidr, (per.get(b.cidr) ?? 0) + 1)
        counted.set(handle, per)
      }
    })
    if (allocated + unalloc.size !== size)
      problems.push(`${key}: ${allocated} allocated + ${unalloc.size} unallocated != ${size}`)
    attrs.forEach((_, i) => {
      if (!referenced.has(i)) problems.push(`${key}: attribute ${i} is not referenced`)
    })
    if (b.deleted !== false) problems.push(`${key}: deleted is not false`)
    const aff = typeof b.affinity === 'string' ? b.affinity : b.hostAffinity ? `host:${b.hostAffinity}` : null
    if (aff?.startsWith('host:')) {
      const affKey = `/calico/ipam/v2/host/${aff.slice(5)}/ipv${family}/block/${enc}`
      blockAffinity.set(affKey, key)
      const v = kvs.get(affKey)
      if (v === undefined) problems.push(`${key}: affine to ${aff} but ${affKey} is missing`)
      else if (v !== '{"state":"confirmed","deleted":false}') problems.push(`${affKey}: ${v}`)
    }
  }
  for (const key of kvs.keys()) {
    if (/^\/calico\/ipam\/v2\/host\/[^/]+\/ipv[46]\/block\//.test(key) && !blockAffinity.has(key))
      problems.push(`${key}: affinity without a matching block`)
  }
  const stored = new Map<string, Record<string, number>>()
  for (const [key, value] of kvs) {
    if (!key.startsWith('/calico/ipam/v2/handle/')) continue
    const h = key.slice('/calico/ipam/v2/handle/'.length)
    try {
      const v = JSON.parse(value) as {block: Record<string, number>; deleted: boolean}
      stored.set(h, v.block)
      if (v.deleted !== false) problems.push(`${key}: deleted is not false`)
    } catch (err) {
      problems.push(`${key}: value is not JSON: ${(err as Error).message}`)
    }
  }
  for (const h of new Set([...stored.keys(), ...counted.keys()])) {
    const want = Object.fromEntries([...(counted.get(h) ?? new Map()).entries()].sort())
    const got = Object.fromEntries(Object.entries(stored.get(h) ?? {}).sort())
    if (!stored.has(h)) problems.push(`handle ${h}: allocated ${JSON.stringify(want)} but no handle record`)
    else if (JSON.stringify(want) !== JSON.stringify(got))
      problems.push(`handle ${h}: record says ${JSON.stringify(got)}, allocations say ${JSON.stringify(want)}`)
  }
  return {problems, owners, blocks}
}

// ---------------------------------------------------------------------------------------------- errors

/** exit `status`, nothing on stdout, one `Error:` line naming `endpoint`, no stack. */
export function assertEndpointError(r: RunResult, status: number, endpoint: string, message?: RegExp): void {
  assertCleanError(r, status, endpoint)
  if (message) assert.match(r.stderr, message)
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
