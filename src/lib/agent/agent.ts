// The per-node agent as a whole: one datastore connection, one writer queue, the socket server, the metrics
// listener and the optional GC loop, started in that order and stopped in reverse.
import fs from 'node:fs'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {ValidationError} from '../errors.js'
import {makeCtx} from '../ipam/context.js'
import {validateHostName} from '../ipam/node.js'
import {openStore as defaultOpenStore, type OpenOptions} from '../store/open.js'
import type {DatastoreSettings} from '../store/settings.js'
import type {Store} from '../store/store.js'
import {Batcher} from './batcher.js'
import {CountedStore} from '../store/counted.js'
import {GcLoop, type GcPass} from './gc-loop.js'
import {AgentMetrics, LEAK_SCAN_INTERVAL_MS} from './metrics.js'
import {datastoreId, validateSocketPath} from '../agent-client/protocol.js'
import {createAgentServer} from './server.js'
import {listenUnix} from './socket.js'
import {lineLogger, type Logger} from '../log/logger.js'

export interface AgentOptions {
  node: string
  settings: DatastoreSettings
  socket: string
  /** `host:port` for /metrics over TCP; '' for none. Port 0 picks a free port (see RunningAgent.metricsUrl). */
  metricsAddress: string
  /** 0: no background GC. */
  gcIntervalMs: number
  gcGraceMs: number
  /** How often the leak figures of the metrics are computed in the background (default 1 min; 0: never). */
  leakScanIntervalMs?: number
  batchWindowMs?: number
  holdRepliesMs?: number
  version: string
  log: (line: string) => void
  /** Levels and fields (`ipamctl agent run --log-format/--log-level`); absent: every event through `log`. */
  logger?: Logger
  openStore?: (s: DatastoreSettings, opts: OpenOptions) => Promise<Store>
}

export interface RunningAgent {
  readonly socket: string
  readonly metricsUrl?: string
  readonly datastore: string
  /** Graceful: stop taking requests, answer those in flight, finish queued writes, close the store, remove the socket. */
  stop(): Promise<void>
}

export function parseListenAddress(text: string): {host: string; port: number} {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text)
  const port = m ? Number(m[3]) : NaN
  if (!m || port > 65535)
    throw new ValidationError(`invalid --metrics-address ${JSON.stringify(text)}: use HOST:PORT, e.g. 127.0.0.1:9099`)
  return {host: m[1] ?? m[2]!, port}
}

export async function startAgent(o: AgentOptions): Promise<RunningAgent> {
  const logger = o.logger ?? lineLogger(o.log)
  validateHostName(o.node)
  validateSocketPath(o.socket, '--socket')
  const listen = o.metricsAddress === '' ? undefined : parseListenAddress(o.metricsAddress)
  // The agent is the node's IPAM writer: like a plugin's ADD, it creates a missing embedded store.
  const inner = await (o.openStore ?? defaultOpenStore)(o.settings, {
    mode: 'create',
    onCreated: (file) => logger.info(`created new datastore at ${file}`),
  })
  const cleanup: (() => Promise<unknown> | unknown)[] = [() => inner.close()]
  const undo = async () => {
    for (const fn of cleanup.reverse()) await Promise.resolve(fn()).catch(() => {})
  }
  try {
    // Fail now, with the store's own message, rather than on the first pod.
    await inner.revision()
    const store = new CountedStore(inner)
    const ctx = makeCtx(store)
    const started = new Date()
    const counters = {
      batches: 0,
      batchedRequests: 0,
      blockTransactions: 0,
      gcPasses: 0,
      gcReleased: 0,
      gcDeletedHandles: 0,
      // Plugin invocations run here whole (`/v1/invoke`), handed back for the datastore path, or refused.
      invocations: {run: 0, handedOver: 0, refused: 0},
    }
    let metrics: AgentMetrics
    const batcher = new Batcher(ctx, {
      windowMs: o.batchWindowMs,
      holdRepliesMs: o.holdRepliesMs,
      conflicts: () => store.counts.conflicts,
      onBatch: (n, d) => {
        logger.debug('batch', {size: n, latency_ms: Math.round(d.ms * 1000) / 1000, conflicts: d.conflicts})
        counters.batches++
        counters.batchedRequests += n
        metrics.batchSize.observe(n)
      },
      onBlockClaimed: (block, node, from) =>
        logger.info(`claimed block ${block} for node ${node}${from ? ` (an empty block of node ${from})` : ''}`, {
          block,
        }),
      onBlockTxn: () => {
        counters.blockTransactions++
        metrics.blockTxns.inc()
      },
    })
    metrics = new AgentMetrics(ctx, store.counts, () => batcher.depth)
    cleanup.push(() => metrics.stop())
    const id = datastoreId(o.settings)
    let metricsUrl: string | undefined
    const {server, draining} = createAgentServer({
      ctx,
      batcher,
      metrics,
      node: o.node,
      datastoreId: id,
      socket: o.socket,
      invoked: (how) => counters.invocations[how === 'handed-over' ? 'handedOver' : how]++,
      log: (line) => logger.error(line),
      logger,
      status: () => ({
        node: o.node,
        datastore: store.description,
        datastoreId: id,
        socket: o.socket,
        metrics: metricsUrl ?? null,
        pid: process.pid,
        version: o.version,
        startedAt: started.toISOString(),
        uptimeSeconds: Math.round((Date.now() - started.getTime()) / 1000),
        queued: batcher.depth,
        counters: {
          ...counters,
          invocations: {...counters.invocations},
          datastoreRoundTrips: {...store.counts.calls},
          casConflicts: store.counts.conflicts,
        },
      }),
    })
    await listenUnix(server, o.socket)
    // Remove the socket only while it is still ours: a successor may have bound the path already.
    const ino = fs.statSync(o.socket).ino
    const removeSocket = () => {
      if (fs.lstatSync(o.socket, {throwIfNoEntry: false})?.ino === ino) fs.rmSync(o.socket, {force: true})
    }
    cleanup.push(removeSocket)
    cleanup.push(() => new Promise((r) => server.close(r)))
    let metricsServer: http.Server | undefined
    if (listen) {
      const ms = http.createServer((req, res) => {
        if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
          res.writeHead(404, {'Content-Type': 'text/plain'}).end('only /metrics here\n')
          return
        }
        metrics.render().then(
          (text) => res.writeHead(200, {'Content-Type': metrics.contentType}).end(text),
          (err: Error) => res.writeHead(503, {'Content-Type': 'text/plain'}).end(`${err.message}\n`),
        )
      })
      await new Promise<void>((resolve, reject) => {
        ms.once('error', reject)
        ms.listen(listen.port, listen.host, () => resolve())
      })
      metricsServer = ms
      cleanup.push(() => new Promise((r) => ms.close(r)))
      const a = ms.address() as AddressInfo
      metricsUrl = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/metrics`
    }
    let gc: GcLoop | undefined
    let notWorkloadLogged = 0
    if (o.gcIntervalMs > 0) {
      gc = new GcLoop(ctx, {
        intervalMs: o.gcIntervalMs,
        graceMs: o.gcGraceMs,
        here: {node: o.node, exists: (p) => fs.existsSync(p)},
        exclusive: (fn) => batcher.alone(fn),
        onPass: (p: GcPass) => {
          counters.gcPasses++
          metrics.setLeaks({
            addresses: p.candidates + p.tooYoung + p.notWorkload + p.netnsHeld,
            handles: p.leakedHandles,
          })
          // Said when the number changes, not every pass: these wait for an operator.
          if (p.notWorkload !== notWorkloadLogged) {
            notWorkloadLogged = p.notWorkload
            if (p.notWorkload > 0)
              logger.info(
                `GC: ${p.notWorkload} leaked addresses are not workload allocations and are not released (ipam gc --dry-run lists them; release them with ipam release)`,
              )
          }
          if (p.deferred > 0) metrics.gcActions.inc({action: 'deferred'}, p.deferred)
          const r = p.result
          const pass = {
            candidates: p.candidates,
            too_young: p.tooYoung,
            not_workload: p.notWorkload,
            netns_held: p.netnsHeld,
            leaked_handles: p.leakedHandles,
            deferred: p.deferred,
          }
          // A pass that finds nothing is a debug line; one that decides anything, info.
          if (r || p.deferred > 0) logger.info('GC pass', {...pass, released: r?.released.length ?? 0})
          else logger.debug('GC pass', pass)
          if (p.deferred > 0)
            logger.info(
              `GC: ${p.deferred} leaked addresses or handles seen for the first time; released on the next pass if still leaked`,
            )
          if (!r) return
          counters.gcReleased += r.released.length
          counters.gcDeletedHandles += r.deletedHandles.length
          for (const [action, n] of [
            ['released', r.released.length],
            ['skipped', r.skippedIps.length],
            ['handle_deleted', r.deletedHandles.length],
            ['handle_skipped', r.skippedHandles.length],
          ] as const) {
            if (n > 0) metrics.gcActions.inc({action}, n)
          }
          if (r.skippedIps.length + r.skippedHandles.length > 0)
            logger.info('GC left changed allocations alone', {ips: r.skippedIps, handles: r.skippedHandles})
          if (r.released.length + r.deletedHandles.length > 0)
            logger.info(
              `GC released ${r.released.join(', ') || 'no addresses'}; deleted handles ${r.deletedHandles.join(', ') || 'none'}`,
            )
        },
        onError: (err) => logger.error(`GC pass failed: ${(err as Error).message}`),
      })
      gc.start()
    }
    const leakScanMs = o.leakScanIntervalMs ?? LEAK_SCAN_INTERVAL_MS
    if (leakScanMs > 0)
      metrics.enableLeakScans(leakScanMs, (err) => logger.error(`leak scan failed: ${(err as Error).message}`))
    logger.info(
      `ready on ${o.socket} (node ${o.node}, datastore ${store.description}${metricsUrl ? `, metrics ${metricsUrl}` : ''}${gc ? `, gc every ${o.gcIntervalMs / 1000} s` : ''})`,
    )
    let stopping: Promise<void> | undefined
    return {
      socket: o.socket,
      metricsUrl,
      datastore: store.description,
      stop: () =>
        (stopping ??= (async () => {
          // New connections are refused from here on (the socket file goes too, so plugins go direct).
          server.close()
          removeSocket()
          await gc?.stop()
          await draining()
          await batcher.drain()
          server.closeAllConnections()
          metricsServer?.closeAllConnections()
          await undo()
        })()),
    }
  } catch (err) {
    await undo()
    throw err
  }
}
