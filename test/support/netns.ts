// ip(8) helpers shared by the tests that build real network namespaces and veths.
import {execFileSync} from 'node:child_process'

export function ip(...args: string[]): string {
  return execFileSync('ip', args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']})
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function ipJson<T = any>(...args: string[]): T {
  const out = ip('-j', ...args).trim()
  return (out ? JSON.parse(out) : []) as T
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
