// SHA-1 in plain JavaScript, for the one place that needs it on a pod's ADD path: the host veth name of a
// Kubernetes pod is derived from SHA-1(`<namespace>.<pod>`) (dataplane/names.ts). Loading node:crypto costs the CNI
// plugin ~5 ms of start-up (about 20 internal modules) to hash a few dozen bytes, a sixth of its latency budget.
// Not for security: Calico uses SHA-1 only to make a short, stable name.

const rotl = (x: number, n: number): number => (x << n) | (x >>> (32 - n))

/** SHA-1 of `data` (a string is hashed as UTF-8), as 40 lower-case hex characters. */
export function sha1Hex(data: string | Uint8Array): string {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data
  // Message + 0x80 + zero padding + 64-bit big-endian bit length, to a multiple of 64 bytes.
  const blocks = Math.ceil((bytes.length + 9) / 64)
  const buf = new Uint8Array(blocks * 64)
  buf.set(bytes)
  buf[bytes.length] = 0x80
  const view = new DataView(buf.buffer)
  const bits = bytes.length * 8
  view.setUint32(buf.length - 8, Math.floor(bits / 2 ** 32))
  view.setUint32(buf.length - 4, bits >>> 0)

  let h0 = 0x67452301,
    h1 = 0xefcdab89,
    h2 = 0x98badcfe,
    h3 = 0x10325476,
    h4 = 0xc3d2e1f0
  const w = new Int32Array(80)
  for (let off = 0; off < buf.length; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getInt32(off + i * 4)
    for (let i = 16; i < 80; i++) w[i] = rotl(w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!, 1)
    let a = h0,
      b = h1,
      c = h2,
      d = h3,
      e = h4
    for (let i = 0; i < 80; i++) {
      const [f, k] =
        i < 20
          ? [(b & c) | (~b & d), 0x5a827999]
          : i < 40
            ? [b ^ c ^ d, 0x6ed9eba1]
            : i < 60
              ? [(b & c) | (b & d) | (c & d), 0x8f1bbcdc]
              : [b ^ c ^ d, 0xca62c1d6]
      const t = (rotl(a, 5) + f + e + k + w[i]!) | 0
      e = d
      d = c
      c = rotl(b, 30)
      b = a
      a = t
    }
    h0 = (h0 + a) | 0
    h1 = (h1 + b) | 0
    h2 = (h2 + c) | 0
    h3 = (h3 + d) | 0
    h4 = (h4 + e) | 0
  }
  return [h0, h1, h2, h3, h4].map((h) => (h >>> 0).toString(16).padStart(8, '0')).join('')
}
