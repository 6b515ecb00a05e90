// Random identifiers (resource uids, cluster GUIDs, generated names) from the kernel's CSPRNG, read directly:
// node:crypto would give the same bytes, but loading it costs a CNI plugin process ~5 ms of its start-up (about
// 20 internal modules, the stream stack among them) for 16 bytes per ADD.
import {closeSync, openSync, readSync} from 'node:fs'

/** Bytes read from /dev/urandom at a time: one open/read/close serves many ids (an allocator creating Node
 * records for 1,000 hosts at once spent more on those syscalls than on the records). */
const POOL_BYTES = 512
let pool = new Uint8Array(0)
let used = 0

function readUrandom(out: Uint8Array): void {
  const fd = openSync('/dev/urandom', 'r')
  try {
    for (let off = 0; off < out.length; ) {
      const got = readSync(fd, out, off, out.length - off, null)
      if (got <= 0) throw new Error('/dev/urandom returned no data')
      off += got
    }
  } finally {
    closeSync(fd)
  }
}

/** `n` bytes from /dev/urandom (getrandom(2)'s pool; never blocks once the system has booted), each used once. */
export function randomBytes(n: number): Uint8Array {
  if (n > POOL_BYTES) {
    const big = new Uint8Array(n)
    readUrandom(big)
    return big
  }
  if (used + n > pool.length) {
    pool = new Uint8Array(POOL_BYTES)
    readUrandom(pool)
    used = 0
  }
  const out = pool.slice(used, used + n)
  used += n
  return out
}

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')

export const randomHex = (bytes: number): string => hex(randomBytes(bytes))

/** An RFC 9562 version-4 UUID, as Kubernetes and Calico use for metadata.uid. */
export function randomUuid(): string {
  const b = randomBytes(16)
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const h = hex(b)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}
