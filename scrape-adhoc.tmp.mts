// ad hoc: agent scrape vs ipam show on one embedded store (not committed)
import path from 'node:path'
import {autoAssign} from './src/lib/ipam/autoassign.ts'
import {makeCtx} from './src/lib/ipam/context.ts'
import {createPools, getPool} from './src/lib/ipam/pool-admin.ts'
import {SqliteStore} from './src/lib/store/sqlite.ts'
import {parseMetrics, startAgentProc} from './test/support/agent.ts'
import {runProcess} from './test/support/process.ts'
import {median, timeMs} from './bench/support.ts'
const file = process.argv[2]!
const s0 = SqliteStore.open(file)
await getPool(makeCtx(s0), 'pods').catch(() => createPools(makeCtx(s0), [{name: 'pods', cidr: '10.64.0.0/12', blockSize: 26}]))
const show = async () => {
  const r = await runProcess(process.execPath, ['bin/run.cjs', 'ipam', 'show', '--datastore-path', file], {env: {...process.env, IPAMCTL_CONFIG: '/dev/null'}})
  if (r.code !== 0) throw new Error(r.stderr)
  return r.ms
}
const shows: number[] = []
const agent = await startAgentProc(['--node', 'n-new', '--socket', path.join(path.dirname(file), 'a.sock'), '--metrics-address', '127.0.0.1:0', '--leak-scan-interval', '0'], {IPAMCTL_DATASTORE_PATH: file, IPAMCTL_CONFIG: '/dev/null'})
const get = async () => (await timeMs(async () => (await fetch(agent.metricsUrl!)).text()))
const ctx = makeCtx(s0)
try {
  const first = await get()
  const inUse = () => parseMetrics(first.value).get('ipamctl_pool_in_use_addresses{pool="pods",cidr="10.64.0.0/12"}')
  console.log('in use at first scrape', inUse())
  const changed: number[] = []
  const unchanged: number[] = []
  for (let round = 0; round < 3; round++) {
    shows.push(await show())
    for (let i = 0; i < 7; i++) {
      for (let k = 0; k < 10; k++) await autoAssign(ctx, {host: `n-${k}`, num4: 1, num6: 0, handle: `adhoc-${round}-${i}-${k}`})
      changed.push((await get()).ms)
      unchanged.push((await get()).ms)
    }
  }
  console.log(JSON.stringify({showMs: shows.map(Math.round), showMedian: Math.round(median(shows)), firstScrapeMs: Math.round(first.ms), afterAllocsMedian: +median(changed).toFixed(1), unchangedMedian: +median(unchanged).toFixed(1), ratio: +(median(changed) / median(shows)).toFixed(4)}))
} finally {
  agent.proc.kill('SIGTERM'); await agent.exited; await s0.close()
}
