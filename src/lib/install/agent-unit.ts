// `ipamctl agent install`: the systemd unit that runs the per-node agent (README.md "Installing on nodes"). The
// datastore settings go in as they were resolved for this command, but never a credential: settings from a config
// file are passed as --config (the agent reads the file itself), and etcd credentials given any other way are
// refused rather than written into a unit file that `systemctl cat` shows to anyone.
import fs from 'node:fs'
import path from 'node:path'
import {ConflictError, ValidationError} from '../errors.js'
import type {DatastoreSettings} from '../store/settings.js'
import {replaceAtomically} from './install.js'

export const UNIT_NAME = 'ipamctl-agent.service'
export const DEFAULT_UNIT_DIR = '/etc/systemd/system'

export interface AgentUnitInput {
  node: string
  socket: string
  settings: DatastoreSettings
  /** The command that runs `ipamctl`: the node binary and the package's bin/run.cjs. */
  ipamctl: readonly string[]
}

/** One ExecStart word, quoted for systemd: `%` and `$` would be specifiers and variables there. */
function word(w: string): string {
  const escaped = w.replace(/%/g, '%%').replace(/\$/g, '$$$$')
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replace(/(["\\])/g, '\\$1')}"`
}

/** The agent's datastore flags and environment that reproduce `settings`; throws for inline credentials. */
function datastoreArgs(s: DatastoreSettings): {args: string[]; env: string[]} {
  const src = s.sources
  const given = (k: string) => src[k] === 'flag' || src[k] === 'env'
  const secrets = ['etcdUsername', 'etcdPassword'].filter(given)
  if (secrets.length > 0)
    throw new ValidationError(
      `etcd credentials from ${secrets.map((k) => (k === 'etcdUsername' ? 'ETCD_USERNAME' : 'ETCD_PASSWORD')).join(' and ')} would be written into the unit; put them in a config file (etcdUsername, etcdPassword) and pass --config`,
    )
  const args: string[] = []
  if (s.configFile) args.push('--config', path.resolve(s.configFile))
  if (given('datastoreType')) args.push('--datastore', s.type)
  if (given('etcdEndpoints')) args.push('--etcd-endpoints', s.etcdEndpoints.join(','))
  if (given('datastorePath')) args.push('--datastore-path', path.resolve(s.path))
  if (src.timeout === 'flag') args.push('--timeout', String(s.timeoutMs / 1000))
  const env: string[] = []
  for (const [k, name, v] of [
    ['etcdKeyFile', 'ETCD_KEY_FILE', s.etcdKeyFile],
    ['etcdCertFile', 'ETCD_CERT_FILE', s.etcdCertFile],
    ['etcdCaCertFile', 'ETCD_CA_CERT_FILE', s.etcdCaCertFile],
  ] as const)
    if (given(k) && v) env.push(`${name}=${path.resolve(v)}`)
  return {args, env}
}

export function renderAgentUnit(i: AgentUnitInput): string {
  const {args, env} = datastoreArgs(i.settings)
  const exec = [...i.ipamctl, 'agent', 'run', '--node', i.node, '--socket', i.socket, ...args]
  return [
    '# Written by ipamctl agent install; rewrite it with the same command (README.md "Installing on nodes").',
    '[Unit]',
    'Description=ipamctl per-node IPAM agent',
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec.map(word).join(' ')}`,
    ...env.map((e) => `Environment=${word(e)}`),
    'Restart=on-failure',
    'RestartSec=2',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n')
}

export type UnitAction = 'written' | 'replaced' | 'unchanged'

/**
 * Write the unit as `unitDir`/ipamctl-agent.service: nothing if the same text is there, and a different file of
 * that name is replaced only with `force` (it may be the operator's own). Written under a temporary name and
 * renamed, so systemd never reads half a unit.
 */
export function writeAgentUnit(unitDir: string, text: string, force: boolean): {path: string; action: UnitAction} {
  const file = path.join(unitDir, UNIT_NAME)
  let old: string | undefined
  try {
    old = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  if (old === text) return {path: file, action: 'unchanged'}
  if (old !== undefined && !force)
    throw new ConflictError(`${file} exists and differs; pass --force to replace it (--dry-run prints the new unit)`)
  if (!fs.existsSync(unitDir)) throw new ValidationError(`--unit-dir ${unitDir} does not exist`)
  replaceAtomically(file, (tmp) => fs.writeFileSync(tmp, text, {mode: 0o644}))
  return {path: file, action: old === undefined ? 'written' : 'replaced'}
}
