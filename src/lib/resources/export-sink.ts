// Where `datastore export`'s text goes, in file order (docs/design.md, "The export's writer thread"): handed on in
// pieces as it is made (textSink), or, for a file, through a writer thread that also formats some of the pages
// (threadSink), so that a large export uses the machine's second core.
import fs from 'node:fs'
import {MessageChannel, type MessagePort, receiveMessageOnPort, type Worker} from 'node:worker_threads'
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

/** Text gathered into pieces of about PIECE_CHARS characters, each encoded (UTF-8) once and handed to `deliver`. */
class Pieces {
  private pending = ''
  constructor(private readonly deliver: (bytes: Buffer) => void) {}
  add(s: string): void {
    this.pending += s
    if (this.pending.length >= PIECE_CHARS) this.flush()
  }
  flush(): void {
    if (this.pending === '') return
    const bytes = Buffer.from(this.pending)
    this.pending = ''
    this.deliver(bytes)
  }
  drop(): void {
    this.pending = ''
  }
}

/** The export's text encoded (UTF-8) and handed to `write` in pieces, on this thread. */
export function textSink(write: (chunk: Uint8Array) => void): ExportSink {
  const pieces = new Pieces(write)
  return {
    text: (s) => pieces.add(s),
    page: (p) => pieces.add(formatPage(p)),
    finish: async () => pieces.flush(),
    abort: async () => pieces.drop(),
  }
}

/** All of `bytes` to `fd` (a write may take less than it was given). */
export function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.byteLength; ) at += fs.writeSync(fd, bytes, at)
}

/** Slots of the Int32Array the main thread and the writer thread share. */
export const SHARED = {
  /** Messages sent to the thread and not yet done with. */
  queued: 0,
  /** Pages among them. */
  pages: 1,
  /** Set by the thread when a write failed (its error follows on the port), or by abort: drop the rest. */
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
  port: MessagePort
}

/** Main thread → writer thread. */
export type WriterMessage = {bytes: Uint8Array} | {page: Page} | {end: true}
/** Writer thread → main thread, on the port: why writing failed (`code`: an errno name), or that all is written. */
export type WriterReport = {error: {code?: string; message: string}} | {done: true}

/**
 * Pages the thread may have waiting before the main thread formats the next one itself: enough that the thread is
 * never idle while the main thread reads (with 2 it was idle a third of the time), few enough (a few ms of work)
 * that neither thread waits long for the other at the end.
 */
const PAGES_AHEAD = 8
/** Messages in flight at most (pieces of text and pages, ~256 KB each): memory stays bounded if writing is slow. */
const MAX_QUEUED = 64
/** The writer thread's young generation (resourceLimits.maxYoungGenerationSizeMb). */
const THREAD_YOUNG_MB = 64
/** A thread that has not started by then will not: its module did not load. */
const START_MS = 30_000

/**
 * Pages the main thread formats and writes itself before it starts the writer thread: a small store's export is
 * over before a thread would have loaded its modules (tens of ms), so only a large one starts it.
 */
export const THREAD_AFTER_PAGES = 16

/** The writer thread, from the main thread's side: hand-overs in order, with back-pressure, and its report. */
class WriterThread {
  readonly state = new Int32Array(new SharedArrayBuffer(5 * 4))
  private readonly port: MessagePort
  private readonly worker: Worker
  private readonly started = Date.now()
  private report: WriterReport | undefined
  readonly finished: Promise<WriterReport>

  constructor(
    fd: number,
    private readonly failure: (err: {code?: string; message: string}) => Error,
  ) {
    const {port1, port2} = new MessageChannel()
    this.port = port1
    this.worker = startThread(
      threadModule(import.meta.url, 'resources', 'export-sink', 'export-thread'),
      {fd, state: this.state, port: port2} satisfies WriterThreadData,
      [port2],
      // A larger young generation than the default: fewer collections, each copying about as much (what a page
      // holds while it is formatted), so less time collecting.
      {maxYoungGenerationSizeMb: THREAD_YOUNG_MB},
    )
    // Listened to from the start: an 'error' event nobody listens to would end the process.
    this.finished = new Promise<WriterReport>((resolve, reject) => {
      const got = (m: WriterReport) => {
        this.report = m
        resolve(m)
      }
      port1.once('message', got)
      this.worker.once('error', reject)
      // The port and the thread's exit are separate channels: the report the thread sent before it ended may not
      // have been delivered yet, so it is taken from the port here.
      this.worker.once('exit', (code) => {
        const m = receiveMessageOnPort(port1)?.message as WriterReport | undefined
        if (m) got(m)
        else reject(new Error(`internal: the export writer thread ended (exit ${code}) before it finished`))
      })
    })
    this.finished.catch(() => {})
  }

  private failedWith(): Error {
    const m = this.report ?? (receiveMessageOnPort(this.port)?.message as WriterReport | undefined)
    return this.failure(m && 'error' in m ? m.error : {message: 'the writer thread failed'})
  }

  /** Whether the thread has fewer than PAGES_AHEAD pages waiting, so that the next one is worth handing over. */
  wantsPage(): boolean {
    return Atomics.load(this.state, SHARED.pages) < PAGES_AHEAD
  }

  post(m: WriterMessage, transfer: ArrayBuffer[] = []): void {
    const state = this.state
    for (;;) {
      if (Atomics.load(state, SHARED.failed)) throw this.failedWith()
      const queued = Atomics.load(state, SHARED.queued)
      if (queued < MAX_QUEUED) break
      if (!Atomics.load(state, SHARED.alive) && Date.now() - this.started > START_MS)
        throw new Error('internal: the export writer thread did not start')
      Atomics.wait(state, SHARED.queued, queued, 100)
    }
    Atomics.add(state, SHARED.queued, 1)
    if ('page' in m) Atomics.add(state, SHARED.pages, 1)
    this.worker.postMessage(m, transfer)
  }

  async end(): Promise<void> {
    this.post({end: true})
    const last = await this.finished
    this.port.close()
    if ('error' in last) throw this.failure(last.error)
  }

  async stop(): Promise<void> {
    // The thread drops what is still queued, and a write it is making ends before terminate() resolves.
    Atomics.store(this.state, SHARED.failed, 1)
    this.port.close()
    await this.worker.terminate()
  }
}

/**
 * The export's text written to `fd`, from THREAD_AFTER_PAGES pages on (`startAfter`) by a writer thread, in file
 * order. The thread writes every piece the main thread hands it and formats the pages it is given (formatPage)
 * as it writes them; the main thread hands it a page only while it has fewer than PAGES_AHEAD waiting, and
 * formats the others itself, so the two share the work as their speeds allow. Messages keep their order (one
 * port), so the file does. The main thread waits (Atomics.wait: the embedded store's scan is synchronous, so no
 * event is delivered during it) when MAX_QUEUED messages are in flight. A failed write, here or on the thread, is
 * reported through `failure` (given the errno name and message) at the next hand-over or at finish.
 */
export function threadSink(
  fd: number,
  failure: (err: {code?: string; message: string}) => Error,
  opts: {startAfter?: number} = {},
): ExportSink & {pagesOnThread(): number} {
  const startAfter = opts.startAfter ?? THREAD_AFTER_PAGES
  let thread: WriterThread | undefined
  let pages = 0
  let finishing: Promise<void> | undefined
  const pieces = new Pieces((bytes) => {
    // Moved, not copied, when the Buffer owns its memory (only small ones share Node's pool, which must stay).
    if (thread) thread.post({bytes}, bytes.byteLength === bytes.buffer.byteLength ? [bytes.buffer as ArrayBuffer] : [])
    else
      try {
        writeAllSync(fd, bytes)
      } catch (err) {
        throw failure(err as NodeJS.ErrnoException)
      }
  })
  return {
    text: (s) => pieces.add(s),
    page(p) {
      if (!thread && ++pages > startAfter) {
        // Everything before goes to the file first: from now on the thread writes all of it, in order.
        pieces.flush()
        thread = new WriterThread(fd, failure)
      }
      if (!thread?.wantsPage()) {
        pieces.add(formatPage(p))
        return
      }
      pieces.flush()
      thread.post({page: p})
    },
    finish() {
      finishing ??= (async () => {
        pieces.flush()
        await thread?.end()
      })()
      return finishing
    },
    pagesOnThread: () => (thread ? Atomics.load(thread.state, SHARED.formatted) : 0),
    async abort() {
      pieces.drop()
      await thread?.stop()
    },
  }
}
