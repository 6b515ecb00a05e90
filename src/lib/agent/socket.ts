// Taking the agent's unix socket safely: a socket file left by a dead agent is replaced, a live agent's never
// (a second agent on the node would defeat the point of one writer), and anything that is not a socket is
// not touched at all. The socket is created 0660 (umask during bind, so it is never wider, even briefly).
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import {ConflictError, ValidationError} from '../errors.js'

/** Whether something accepts connections on `file` (a connect; nothing is sent). */
export function socketAnswers(file: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.createConnection(file)
    const done = (v: boolean) => {
      clearTimeout(t)
      c.destroy()
      resolve(v)
    }
    // A listener too busy to accept within the bound is still a listener.
    const t = setTimeout(() => done(true), timeoutMs)
    c.on('connect', () => done(true))
    c.on('error', () => done(false))
  })
}

export async function prepareSocketPath(file: string): Promise<void> {
  const dir = path.dirname(file)
  if (!fs.existsSync(dir)) fs.mkdirSync(dir, {recursive: true, mode: 0o755})
  const st = fs.lstatSync(file, {throwIfNoEntry: false})
  if (!st) return
  if (!st.isSocket()) throw new ValidationError(`${file} exists and is not a socket; refusing to replace it`)
  if (await socketAnswers(file)) throw new ConflictError(`another agent is already serving on ${file}; stop it first`)
  fs.unlinkSync(file)
}

/** Listen on `file` with mode 0660. */
export async function listenUnix(server: net.Server, file: string): Promise<void> {
  await prepareSocketPath(file)
  const umask = process.umask(0o117)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(file, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } finally {
    process.umask(umask)
  }
  fs.chmodSync(file, 0o660)
}
