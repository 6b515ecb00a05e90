// The node name a plugin runs as: upstream's DetermineNodename and the nodename-file check of the main plugin.
import fs from 'node:fs'
import {hostname} from 'node:os'
import {ValidationError} from '../errors.js'
import {DEFAULT_NODENAME_FILE, type NetConf} from './netconf.js'

export interface NodenameDeps {
  readFile?: (file: string) => string
  osHostname?: () => string
}

/** Contents of the nodename file, trimmed; '' when it does not exist or cannot be read (upstream logs and moves on). */
export function nodenameFromFile(file: string | undefined, deps: NodenameDeps = {}): string {
  const read = deps.readFile ?? ((f: string) => fs.readFileSync(f, 'utf8'))
  try {
    return read(file || DEFAULT_NODENAME_FILE).trim()
  } catch {
    return ''
  }
}

/** Upstream's DetermineNodename: `nodename` > the nodename file > `hostname` > the OS host name. */
export function determineNodename(conf: NetConf, deps: NodenameDeps = {}): string {
  if (conf.nodename) return conf.nodename
  const fromFile = nodenameFromFile(conf.nodenameFile, deps)
  if (fromFile) return fromFile
  if (conf.hostname) return conf.hostname
  // Go's names.Hostname(): the OS host name, lower-cased.
  return (deps.osHostname ?? hostname)().toLowerCase()
}

/**
 * The main plugin requires the nodename file (written by the node agent) unless `nodename_file_optional`;
 * the message is upstream's: the stat error plus what to check.
 */
export function requireNodenameFile(conf: NetConf, exists: (file: string) => boolean = fs.existsSync): void {
  if (conf.nodenameFileOptional) return
  const file = conf.nodenameFile || DEFAULT_NODENAME_FILE
  if (!exists(file)) {
    throw new ValidationError(
      `stat ${file}: no such file or directory: check that the calico/node container is running and has mounted /var/lib/calico/`,
    )
  }
}

/** The node name a netconf without `nodename` or `hostname` gives on this host (the commands' default node). */
export function localNodename(deps: NodenameDeps = {}): string {
  return nodenameFromFile(undefined, deps) || (deps.osHostname ?? hostname)().toLowerCase()
}
