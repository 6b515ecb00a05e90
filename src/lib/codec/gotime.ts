// Time formats Calico stores, written as Go writes them.

/** RFC 3339 at seconds precision in UTC, as Go's time.Time marshals a whole-second UTC time. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** Go's `time.Now().UTC().String()`: `2026-01-02 03:04:06.123 +0000 UTC`, trailing fraction zeros dropped. */
export function goTimeString(d: Date): string {
  const iso = d.toISOString()
  const frac = iso.slice(20, 23).replace(/0+$/, '')
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? `.${frac}` : ''} +0000 UTC`
}

/** A new block's first sequence number is the claim time in nanoseconds, as upstream does. */
export function nanoTimestamp(d: Date): bigint {
  return BigInt(d.getTime()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n)
}
