// Where `datastore export`'s text goes, in file order (docs/design.md, "The export's writer thread"): handed on in
// pieces as it is made (textSink), or, for a file, through a writer thread that also formats some of the pages
// (threadSink), so that a large export uses the machine's second core.
import {MessageChannel, receiveMessageOnPort, type Worker} from 'node:worker_threads'
import {startThread, threadModule} from '../thread.js'
import {formatPage, type Page} from './export-format.js'

/** What writeExport writes to, in file order. */
export interface ExportSink {
  text(s: string): void
  /** The page's text (formatPage), at this point of the file: made here or by another thread. */
  page(p: Page): void
  /** Hands on what is left; resolves once everything is written, or rejects with what writing it failed with. */
  finish(): Promise<void>
  /** Nothing more is written (the export failed): resolves once nothing can be; safe to call after finish. */
  abort(): Promise<void>
}

/** Text is handed on in pieces of about this many characters: one encoding per piece, not one per item. */
const PIECE_CHARS = 1 << 18

/** The export's text encoded (UTF-8) and handed to `write` in pieces, on this thread. */
export function textSink(write: (chunk: Uint8Array) => void): ExportSink {
  let pending = ''
  const flush = () => {
    if (pending === '') return
    const chunk = Buffer.from(pending)
    pending = ''
    write(chunk)
  }
  return {
    text(s) {
      pending += s
      if (pending.length >= PIECE_CHARS) flush()
    },
    page(p) {
      this.text(formatPage(p))
    },
    async finish() {
      flush()
    },
    async abort() {
      pending = ''
    },
  }
}

/** Slots of the Int32Array the main thread and the writer thread share. */
export const SHARED = {
  /** Messages sent to the thread and not yet done with. */
  queued: 0,
  /** Pages among them. */
  pages: 1,
  /** Set by the thread when a write failed (its error follows on the port). */
  failed: 2,
  /** Set by the thread when it runs. */
  alive: 3,
  /** Pages the thread has formatted. */
  formatted: 4,
} as const

/** What the writer thread is given (export-thread.ts). */
export interface WriterThreadData {
  fd: number
  state: Int32Array
  port: import('node:worker_threads').MessagePort
}

/** Main thread → writer thread. */
export type WriterMessage = {bytes: Uint8Array} | {page: Page} | {end: true}
/** Writer thread → main thread, on the port: why writing failed (`code`: an errno name), or that all is written. */
export type WriterReport = {error: {code?: string; message: string}} | {done: true}

/**
 * Pages the thread may have waiting before the main thread formats the next one itself: one being formatted and
 * one ready keeps the thread busy; more would only leave the main thread idle at the end.
 */
const PAGES_AHEAD = 8
/** Messages in flight at most (pieces of text and pages, ~256 KB each): memory stays bounded if writing is slow. */
const MAX_QUEUED = 64
/** The writer thread's young generation (resourceLimits.maxYoungGenerationSizeMb). */
const THREAD_YOUNG_MB = 64
/** A thread that has not started by then will not: its module did not load. */
const START_MS = 30_000

/**
 * The export's text written to `fd` by a writer thread, in file order. The thread writes every piece the main
 * thread hands it and formats the pages it is given (formatPage) as it writes them; the main thread hands it a
 * page only while it has fewer than PAGES_AHEAD waiting, and formats the others itself, so the two share the work
 * as their speeds allow. Messages keep their order (one port), so the file does. The main thread waits
 * (Atomics.wait: the embedded store's scan is synchronous, so no event is delivered during it) when MAX_QUEUED
 * messages are in flight. A failed write is reported through `failure` (given the errno name and message) at the
 * next hand-over or at finish.
 */
export function threadSink(
  fd: number,
  failure: (err: {code?: string; message: string}) => Error,
): ExportSink & {pagesOnThread(): number} {
  const state = new Int32Array(new SharedArrayBuffer(5 * 4))
  const {port1, port2} = new MessageChannel()
  const started = Date.now()
  const worker: Worker = startThread(
    threadModule(import.meta.url, 'resources', 'export-sink', 'export-thread'),
    {fd, state, port: port2} satisfies WriterThreadData,
    [port2],
    // A larger young generation than the default: fewer collections, each copying about as much (what a page
    // holds while it is formatted), so less time collecting.
    {maxYoungGenerationSizeMb: THREAD_YOUNG_MB},
  )
  // Listened to from the start: an 'error' event nobody listens to would end the process.
  let report: WriterReport | undefined
  const finished = new Promise<WriterReport>((resolve, reject) => {
    const got = (m: WriterReport) => {
      report = m
      resolve(m)
    }
    port1.once('message', got)
    worker.once('error', reject)
    // The port and the thread's exit are separate channels: the report the thread sent before it ended may not
    // have been delivered yet, so it is taken from the port here.
    worker.once('exit', (code) => {
      const m = receiveMessageOnPort(port1)?.message as WriterReport | undefined
      if (m) got(m)
      else reject(new Error(`internal: the export writer thread ended (exit ${code}) before it finished`))
    })
  })
  finished.catch(() => {})
  let pending = ''
  let finishing: Promise<void> | undefined

  const failedWith = (): Error => {
    const m = report ?? (receiveMessageOnPort(port1)?.message as WriterReport | undefined)
    return failure(m && 'error' in m ? m.error : {message: 'the writer thread failed'})
  }
  const post = (m: WriterMessage, transfer: ArrayBuffer[] = []) => {
    for (;;) {
      if (Atomics.load(state, SHARED.failed)) throw failedWith()
      const queued = Atomics.load(state, SHARED.queued)
      if (queued < MAX_QUEUED) break
      if (!Atomics.load(state, SHARED.alive) && Date.now() - started > START_MS)
        throw new Error('internal: the export writer thread did not start')
      Atomics.wait(state, SHARED.queued, queued, 100)
    }
    Atomics.add(state, SHARED.queued, 1)
    worker.postMessage(m, transfer)
  }
  const flush = () => {
    if (pending === '') return
    const bytes = Buffer.from(pending)
    pending = ''
    // Moved, not copied, when the Buffer owns its memory (only small ones share Node's pool, which must stay).
    post({bytes}, bytes.byteLength === bytes.buffer.byteLength ? [bytes.buffer as ArrayBuffer] : [])
  }
  return {
    text(s) {
      pending += s
      if (pending.length >= PIECE_CHARS) flush()
    },
    page(p) {
      if (Atomics.load(state, SHARED.pages) >= PAGES_AHEAD) {
        this.text(formatPage(p))
        return
      }
      flush()
      Atomics.add(state, SHARED.pages, 1)
      post({page: p})
    },
    finish() {
      finishing ??= (async () => {
        flush()
        post({end: true})
        const last = await finished
        port1.close()
        if ('error' in last) throw failure(last.error)
      })()
      return finishing
    },
    pagesOnThread: () => Atomics.load(state, SHARED.formatted),
    async abort() {
      // The thread drops what is still queued, and a write it is making ends before terminate() resolves.
      Atomics.store(state, SHARED.failed, 1)
      port1.close()
      await worker.terminate()
    },
  }
}
