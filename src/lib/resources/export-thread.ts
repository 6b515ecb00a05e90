// `datastore export`'s writer thread (threadSink in export-sink.ts): writes the pieces of text the main thread
// hands it, and formats and writes the pages it is given, in the order they come, to the file both share.
import {parentPort, workerData} from 'node:worker_threads'
import {formatPage} from './export-format.js'
import {SHARED, type WriterMessage, type WriterReport, type WriterThreadData, writeAllSync} from './export-sink.js'

const {fd, state, port} = workerData as WriterThreadData
const report = (r: WriterReport) => port.postMessage(r)

Atomics.store(state, SHARED.alive, 1)
parentPort!.on('message', (m: WriterMessage) => {
  try {
    // After a failure the rest is dropped: the main thread throws at its next hand-over.
    if (!Atomics.load(state, SHARED.failed)) {
      if ('bytes' in m) writeAllSync(fd, m.bytes)
      else if ('page' in m) {
        writeAllSync(fd, Buffer.from(formatPage(m.page)))
        Atomics.add(state, SHARED.formatted, 1)
      } else {
        report({done: true})
        parentPort!.close()
      }
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    report({error: {code: e.code, message: e.message}})
    Atomics.store(state, SHARED.failed, 1)
  } finally {
    if ('page' in m) Atomics.sub(state, SHARED.pages, 1)
    Atomics.sub(state, SHARED.queued, 1)
    Atomics.notify(state, SHARED.queued)
  }
})
