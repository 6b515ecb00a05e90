// The hand-made rtnetlink messages (src/lib/dataplane/rtnl-codec.ts), byte by byte. The fixed headers are the
// kernel structs as the `netlink` package's own formatters (and iproute2) lay them out; the veth.netns
// integration tests then show the kernel accepting every request and the decoders reading its replies.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import * as c from '../../../src/lib/dataplane/rtnl-codec.ts'

const hex = (b: Buffer) => b.toString('hex')

describe('rtnetlink encoding', () => {
  it('fixed headers: ifinfomsg, rtmsg, ifaddrmsg, ndmsg', () => {
    assert.equal(hex(c.ifinfomsg({index: 4, flags: c.IFF_UP, change: c.IFF_UP})), '00000000040000000100000001000000')
    assert.equal(hex(c.ifinfomsg()), '0'.repeat(32))
    // AF_INET /32, main table, proto boot, scope link, unicast
    assert.equal(
      hex(
        c.rtmsg({
          family: 2,
          dstLen: 32,
          table: 254,
          protocol: c.RTPROT_BOOT,
          scope: c.RT_SCOPE.LINK,
          type: c.RTN_UNICAST,
        }),
      ),
      '02200000fe03fd0100000000',
    )
    assert.equal(hex(c.ifaddrmsg({family: 10, prefixlen: 128, index: 5, flags: c.IFA_F_NODAD})), '0a80020005000000')
    assert.equal(hex(c.ndmsg({family: 2, ifindex: 9, state: c.NUD_PERMANENT})), '020000000900000080000000')
  })

  it('attributes: length without padding, padded to 4, strings NUL-terminated', () => {
    assert.equal(hex(c.strAttr(c.IFLA.IFNAME, 'eth0')), '09000300' + '6574683000' + '000000')
    assert.equal(hex(c.u32Attr(c.IFLA.MTU, 1450)), '08000400aa050000')
    assert.equal(hex(c.attr(c.IFLA.ADDRESS, Buffer.from('eeeeeeeeeeee', 'hex'))), '0a000100eeeeeeeeeeee0000')
    assert.equal(hex(c.attr(c.RTA.DST, Buffer.alloc(0))), '04000100')
  })

  it('a veth request nests LINKINFO > INFO_DATA > VETH_INFO_PEER > ifinfomsg + attributes, each length exact', () => {
    const peer = [c.ifinfomsg(), c.strAttr(c.IFLA.IFNAME, 'eth0'), c.u32Attr(c.IFLA.NET_NS_FD, 7)]
    const li = c.nested(c.IFLA.LINKINFO, [
      c.strAttr(c.IFLA_INFO.KIND, 'veth'),
      c.nested(c.IFLA_INFO.DATA, [c.nested(c.VETH_INFO_PEER, peer)]),
    ])
    assert.equal(li.readUInt16LE(0), li.length, 'already aligned: length = bytes')
    const info = c.parseAttrs(li, 4)
    assert.equal(info.get(c.IFLA_INFO.KIND)!.toString(), 'veth\0')
    const peerAttr = c.parseAttrs(info.get(c.IFLA_INFO.DATA)!, 0).get(c.VETH_INFO_PEER)!
    assert.equal(peerAttr.length, 16 + 12 + 8)
    const link = c.decodeLink(peerAttr)
    assert.deepEqual([link.index, link.ifname], [0, 'eth0'])
    assert.equal(c.parseAttrs(peerAttr, 16).get(c.IFLA.NET_NS_FD)!.readUInt32LE(0), 7)
  })
})

describe('rtnetlink decoding', () => {
  it('a link: index, up flag, name, MAC, MTU; flag bits in attribute types are ignored', () => {
    const msg = Buffer.concat([
      c.ifinfomsg({index: 42, flags: c.IFF_UP | 0x1000}),
      c.strAttr(c.IFLA.IFNAME, 'cali1234567890a'),
      c.attr(c.IFLA.ADDRESS, Buffer.from('eeeeeeeeeeee', 'hex')),
      c.u32Attr(c.IFLA.MTU, 1480),
      c.attr(c.IFLA.LINKINFO | 0x8000, Buffer.alloc(4)), // NLA_F_NESTED set, as the kernel sends it
    ])
    const link = c.decodeLink(msg)
    assert.deepEqual(
      {...link, address: hex(link.address!)},
      {index: 42, up: true, ifname: 'cali1234567890a', address: 'eeeeeeeeeeee', mtu: 1480},
    )
    assert.equal(c.parseAttrs(msg, 16).has(c.IFLA.LINKINFO), true)
    assert.equal(c.decodeLink(c.ifinfomsg({index: 3})).up, false)
  })

  it('a link alias (IFLA_IFALIAS, the host veth owner marker) is decoded when present', () => {
    const link = c.decodeLink(
      Buffer.concat([
        c.ifinfomsg({index: 7}),
        c.strAttr(c.IFLA.IFNAME, 'calix'),
        c.strAttr(c.IFLA.IFALIAS, 'ipamctl-cni:c1'),
      ]),
    )
    assert.equal(link.alias, 'ipamctl-cni:c1')
    assert.equal('alias' in c.decodeLink(c.ifinfomsg({index: 7})), false)
  })

  it('a route: RTA_TABLE wins over rtm_table; dst, oif, gateway', () => {
    const r = c.decodeRoute(
      Buffer.concat([
        c.rtmsg({family: 2, dstLen: 0, table: 252, scope: 0}),
        c.u32Attr(c.RTA.TABLE, 1000),
        c.attr(c.RTA.GATEWAY, Buffer.from([169, 254, 1, 1])),
        c.u32Attr(c.RTA.OIF, 7),
      ]),
    )
    assert.deepEqual(
      {...r, gateway: [...r.gateway!]},
      {family: 2, dstLen: 0, table: 1000, scope: 0, dst: undefined, oif: 7, gateway: [169, 254, 1, 1]},
    )
    assert.equal(c.decodeRoute(c.rtmsg({family: 10, dstLen: 128, table: 254, scope: 253})).table, 254)
  })

  it('an address: family, prefix, index, local and address', () => {
    const a = c.decodeAddress(
      Buffer.concat([
        c.ifaddrmsg({family: 2, prefixlen: 32, index: 9}),
        c.attr(c.IFA.LOCAL, Buffer.from([10, 0, 0, 5])),
        c.attr(c.IFA.ADDRESS, Buffer.from([10, 0, 0, 6])),
      ]),
    )
    assert.deepEqual(
      [a.family, a.prefixlen, a.index, [...a.local!], [...a.address!]],
      [2, 32, 9, [10, 0, 0, 5], [10, 0, 0, 6]],
    )
  })

  it('truncated input: a short header throws, a cut attribute ends the list', () => {
    assert.throws(() => c.decodeLink(Buffer.alloc(15)), /short link message/)
    assert.throws(() => c.decodeRoute(Buffer.alloc(11)), /short route message/)
    const cut = Buffer.concat([
      c.ifinfomsg({index: 1}),
      c.strAttr(c.IFLA.IFNAME, 'lo'),
      c.u32Attr(c.IFLA.MTU, 65536).subarray(0, 6),
    ])
    assert.deepEqual(c.decodeLink(cut), {index: 1, up: false, ifname: 'lo', address: undefined, mtu: undefined})
    // A zero length must not loop forever.
    assert.equal(c.parseAttrs(Buffer.concat([c.ifinfomsg(), Buffer.alloc(8)]), 16).size, 0)
  })

  it('decoded buffers are copies: reusing the receive buffer does not change them', () => {
    const msg = Buffer.concat([c.ifinfomsg({index: 2}), c.attr(c.IFLA.ADDRESS, Buffer.from('020000000001', 'hex'))])
    const link = c.decodeLink(msg)
    msg.fill(0)
    assert.equal(hex(link.address!), '020000000001')
  })
})
