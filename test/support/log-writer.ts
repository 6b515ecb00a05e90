// A child process for test/lib/log/file.test.ts: appends `count` numbered lines through the real logger and log
// file, with a tiny rotation size, so that many such processes rotate the same file while the others write.
// argv: file writer-id count max-bytes max-count
import {LogFile} from '../../src/lib/log/file.ts'
import {createLogger} from '../../src/lib/log/logger.ts'

const [file, id, count, maxBytes, maxCount] = process.argv.slice(2)
const sink = LogFile.open(file!, {
  maxBytes: Number(maxBytes),
  maxAgeMs: 86_400_000,
  maxCount: Number(maxCount),
  onFailure: (what) => {
    process.stderr.write(`${what}\n`)
    process.exitCode = 1
  },
})
const log = createLogger({level: 'info', component: 'writer', context: {writer: id}, sinks: [sink]})
for (let i = 0; i < Number(count); i++) log.info('line', {seq: i, pad: 'x'.repeat(i % 40)})
sink.close()
