// One read shared by the agent's requests that wait for it at the same time, without ever handing a request a
// value older than the request: a caller joins only a read that starts after it called. A burst of ADDs reaches
// the agent in a heap; each asking the datastore for the same record on its own was one round trip per ADD
// where one or two serve them all.

/**
 * `read`, shared: a call while no read is in flight starts one; a call while one is in flight waits for it and
 * then shares the next one (started as soon as it settles, for everyone who called meanwhile), whose answer is
 * therefore as fresh as a read of its own. A failed read fails each caller that shared it.
 */
export function freshRead<T>(read: () => Promise<T>): () => Promise<T> {
  let current: Promise<T> | undefined
  let next: Promise<T> | undefined
  const start = (): Promise<T> => {
    const p = read()
    current = p
    const settled = () => {
      if (current === p) current = undefined
    }
    p.then(settled, settled)
    return p
  }
  return () => {
    if (!current) return start()
    next ??= current
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        next = undefined
        return start()
      })
    return next
  }
}
