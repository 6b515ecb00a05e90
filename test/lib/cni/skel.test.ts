// The dispatcher with injected env/stdin/stdout: VERSION, env validation, decoding, version checks, the
// error object's exact shape, and that nothing but one JSON value ever reaches stdout.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {CniError} from '../../../src/lib/cni/errors.ts'
import type {CniResult} from '../../../src/lib/cni/result.ts'
import {type CmdArgs, type PluginFuncs, pluginMain, validateIfName} from '../../../src/lib/cni/skel.ts'
import {DatastoreUnavailableError, ValidationError} from '../../../src/lib/errors.ts'
import {ABOUT, addEnv, errorOf, fakeIo, runSkel} from './helpers.ts'

const CONF = (v: string | null = '1.0.0', extra: Record<string, unknown> = {}) =>
  JSON.stringify({...(v === null ? {} : {cniVersion: v}), name: 'net1', type: 'x', ...extra})
const RESULT: CniResult = {ips: [{address: '10.0.0.5/26'}], routes: [{dst: '10.0.0.5/26'}], dns: {}}

/** Handlers that record their calls. */
function recorder(overrides: Partial<PluginFuncs> = {}) {
  const calls: CmdArgs[] = []
  const funcs: PluginFuncs = {
    add: async (a) => {
      calls.push(a)
      return RESULT
    },
    del: async (a) => void calls.push(a),
    check: async (a) => void calls.push(a),
    status: async (a) => void calls.push(a),
    gc: async (a) => void calls.push(a),
    ...overrides,
  }
  return {calls, funcs}
}

describe('VERSION', () => {
  it('prints the supported versions as one compact line, with only CNI_COMMAND set', async () => {
    const r = await runSkel(recorder().funcs, {CNI_COMMAND: 'VERSION'}, '')
    assert.equal(r.code, 0)
    assert.equal(
      r.stdout,
      '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}\n',
    )
    assert.equal(r.stderr, '')
  })

  it("echoes the caller's cniVersion when it is supported", async () => {
    const r = await runSkel(recorder().funcs, {CNI_COMMAND: 'VERSION'}, '{"cniVersion":"0.4.0"}')
    assert.equal(JSON.parse(r.stdout).cniVersion, '0.4.0')
    const u = await runSkel(recorder().funcs, {CNI_COMMAND: 'VERSION'}, '{"cniVersion":"9.9.9"}')
    assert.equal(JSON.parse(u.stdout).cniVersion, '1.1.0')
    const g = await runSkel(recorder().funcs, {CNI_COMMAND: 'VERSION'}, 'garbage')
    assert.equal(g.code, 0)
  })

  it('does not wait long for a stdin that never ends', async () => {
    const io = {...fakeIo({CNI_COMMAND: 'VERSION'}), readStdin: () => new Promise<string>(() => {})}
    let out = ''
    io.stdout = {write: (x: string) => (out += x)}
    const t0 = Date.now()
    assert.equal(await pluginMain(recorder().funcs, io, {about: ABOUT}), 0)
    assert.ok(Date.now() - t0 < 2000)
    assert.equal(JSON.parse(out).cniVersion, '1.1.0')
  })

  it('does not read a terminal', async () => {
    const io = fakeIo({CNI_COMMAND: 'VERSION'}, '{"cniVersion":"0.4.0"}', {tty: true})
    assert.equal(await pluginMain(recorder().funcs, io, {about: ABOUT}), 0)
    assert.equal(io.stdinReads(), 0)
    assert.equal(JSON.parse(io.stdoutText()).cniVersion, '1.1.0')
  })
})

describe('environment', () => {
  it('prints the about line on stderr and nothing on stdout without CNI_COMMAND', async () => {
    const r = await runSkel(recorder().funcs, {}, '')
    assert.equal(r.code, 0)
    assert.equal(r.stdout, '')
    assert.equal(
      r.stderr,
      `${ABOUT}\nCNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n`,
    )
  })

  it('rejects an unknown CNI_COMMAND with code 4', async () => {
    const e = errorOf(await runSkel(recorder().funcs, addEnv({CNI_COMMAND: 'FROB'}), CONF()))
    assert.equal(e.code, 4)
    assert.equal(e.msg, 'unknown CNI_COMMAND: FROB')
  })

  for (const v of ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME']) {
    it(`ADD without ${v} is code 4 naming it`, async () => {
      const {calls, funcs} = recorder()
      const e = errorOf(await runSkel(funcs, addEnv({[v]: undefined}), CONF()))
      assert.equal(e.code, 4)
      assert.equal(e.msg, `required env variables [${v}] missing`)
      assert.equal(calls.length, 0)
    })
  }

  it("names every missing variable, in the Go library's order", async () => {
    const e = errorOf(await runSkel(recorder().funcs, {CNI_COMMAND: 'CHECK'}, CONF()))
    assert.equal(e.msg, 'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing')
  })

  it('treats an empty variable as missing', async () => {
    const e = errorOf(await runSkel(recorder().funcs, addEnv({CNI_IFNAME: ''}), CONF()))
    assert.equal(e.msg, 'required env variables [CNI_IFNAME] missing')
  })

  it('DEL needs CNI_IFNAME but not CNI_NETNS', async () => {
    const {calls, funcs} = recorder()
    const ok = await runSkel(funcs, addEnv({CNI_COMMAND: 'DEL', CNI_NETNS: undefined}), CONF())
    assert.equal(ok.code, 0)
    assert.equal(ok.stdout, '')
    assert.equal(calls[0]!.netns, '')
    const e = errorOf(await runSkel(funcs, addEnv({CNI_COMMAND: 'DEL', CNI_IFNAME: undefined}), CONF()))
    assert.equal(e.msg, 'required env variables [CNI_IFNAME] missing')
  })

  it('CNI_PATH is optional for ADD/DEL/CHECK/STATUS but required for GC', async () => {
    assert.equal((await runSkel(recorder().funcs, addEnv({CNI_PATH: undefined}), CONF())).code, 0)
    assert.equal((await runSkel(recorder().funcs, {CNI_COMMAND: 'STATUS'}, CONF('1.1.0'))).code, 0)
    const e = errorOf(await runSkel(recorder().funcs, {CNI_COMMAND: 'GC'}, CONF('1.1.0')))
    assert.equal(e.msg, 'required env variables [CNI_PATH] missing')
    assert.equal(
      (await runSkel(recorder().funcs, {CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin'}, CONF('1.1.0'))).code,
      0,
    )
  })

  it('lets a plugin require more (e.g. CNI_PATH for a delegating main plugin)', async () => {
    const e = errorOf(
      await runSkel(recorder().funcs, addEnv({CNI_PATH: undefined}), CONF(), {
        requiredEnv: {ADD: ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH']},
      }),
    )
    assert.equal(e.msg, 'required env variables [CNI_PATH] missing')
  })

  it('validates the container ID', async () => {
    const e = errorOf(await runSkel(recorder().funcs, addEnv({CNI_CONTAINERID: '-bad id'}), CONF()))
    assert.equal(e.code, 4)
    assert.equal(e.msg, 'invalid characters in containerID')
    assert.equal(e.details, '-bad id')
    assert.equal((await runSkel(recorder().funcs, addEnv({CNI_CONTAINERID: 'cnitool-0a1b_c.d-e'}), CONF())).code, 0)
  })

  it('validates the interface name', async () => {
    const e = errorOf(await runSkel(recorder().funcs, addEnv({CNI_IFNAME: 'a-very-long-ifname'}), CONF()))
    assert.equal(e.code, 4)
    assert.equal(e.msg, 'interface name is too long')
    assert.equal(e.details, 'interface name should be less than 16 characters')
    for (const [name, msg] of [
      ['..', 'interface name is . or ..'],
      ['eth/0', 'interface name contains / or : or whitespace characters'],
      ['eth:0', 'interface name contains / or : or whitespace characters'],
      ['eth 0', 'interface name contains / or : or whitespace characters'],
    ]) {
      assert.throws(
        () => validateIfName(name!),
        (err: unknown) => err instanceof CniError && err.code === 4 && err.msg === msg,
        name,
      )
    }
    assert.doesNotThrow(() => validateIfName('net1'))
    assert.doesNotThrow(() => validateIfName('123456789012345'))
  })
})

describe('config decoding and versions', () => {
  it('malformed JSON is code 6 and reaches no handler', async () => {
    const {calls, funcs} = recorder()
    for (const stdin of ['{"cniVersion": "1.0.0", name', '', '[1,2]', '"str"']) {
      const e = errorOf(await runSkel(funcs, addEnv(), stdin))
      assert.equal(e.code, 6, stdin)
      assert.match(e.msg, /^error unmarshall network config: /, stdin)
    }
    assert.equal(calls.length, 0)
  })

  it('a missing network name is code 7', async () => {
    const e = errorOf(await runSkel(recorder().funcs, addEnv(), '{"cniVersion":"1.0.0"}'))
    assert.equal(e.code, 7)
    assert.equal(e.msg, 'missing network name')
  })

  it('an unsupported cniVersion is code 1 with the details the Go library gives', async () => {
    const {calls, funcs} = recorder()
    const e = errorOf(await runSkel(funcs, addEnv(), CONF('99.0.0')))
    assert.equal(e.code, 1)
    assert.equal(e.msg, 'incompatible CNI versions')
    assert.equal(
      e.details,
      'config is "99.0.0", plugin supports ["0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]',
    )
    assert.equal(calls.length, 0)
    assert.equal(errorOf(await runSkel(funcs, addEnv({CNI_COMMAND: 'DEL'}), CONF('1.2.0'))).code, 1)
  })

  it('a non-string cniVersion is a decoding error', async () => {
    assert.equal(errorOf(await runSkel(recorder().funcs, addEnv(), '{"cniVersion":1,"name":"n"}')).code, 6)
  })

  it('a missing cniVersion means 0.2.0', async () => {
    const {calls, funcs} = recorder()
    const r = await runSkel(funcs, addEnv(), CONF(null))
    assert.equal(r.code, 0)
    assert.equal(calls[0]!.cniVersion, '0.2.0')
    assert.deepEqual(JSON.parse(r.stdout), {
      cniVersion: '0.2.0',
      ip4: {ip: '10.0.0.5/26', routes: [{dst: '10.0.0.5/26'}]},
      dns: {},
    })
  })

  it('CHECK needs a config version of at least 0.4.0; STATUS and GC need 1.1.0', async () => {
    const c = errorOf(await runSkel(recorder().funcs, addEnv({CNI_COMMAND: 'CHECK'}), CONF('0.3.1')))
    assert.deepEqual([c.code, c.msg], [1, 'config version does not allow CHECK'])
    assert.equal((await runSkel(recorder().funcs, addEnv({CNI_COMMAND: 'CHECK'}), CONF('0.4.0'))).code, 0)
    const s = errorOf(await runSkel(recorder().funcs, {CNI_COMMAND: 'STATUS'}, CONF('1.0.0')))
    assert.deepEqual([s.code, s.msg], [1, 'config version does not allow STATUS'])
    const g = errorOf(await runSkel(recorder().funcs, {CNI_COMMAND: 'GC', CNI_PATH: '/p'}, CONF('1.0.0')))
    assert.deepEqual([g.code, g.msg], [1, 'config version does not allow GC'])
  })

  it('a stdin read failure is code 5', async () => {
    const e = errorOf(await runSkel(recorder().funcs, addEnv(), new Error('EIO')))
    assert.deepEqual([e.code, e.msg], [5, 'error reading from stdin: EIO'])
  })
})

describe('dispatch and output', () => {
  it('ADD prints exactly the result in the requested version', async () => {
    const {calls, funcs} = recorder()
    const r = await runSkel(funcs, addEnv({CNI_ARGS: 'K=V'}), CONF('0.4.0', {ipam: {type: 'x'}}))
    assert.equal(r.code, 0)
    assert.equal(
      r.stdout,
      '{\n    "cniVersion": "0.4.0",\n    "ips": [\n        {\n            "version": "4",\n            "address": "10.0.0.5/26"\n        }\n    ],\n    "routes": [\n        {\n            "dst": "10.0.0.5/26"\n        }\n    ],\n    "dns": {}\n}',
    )
    const a = calls[0]!
    assert.equal(a.command, 'ADD')
    assert.equal(a.containerId, 'c0ffee')
    assert.equal(a.netns, '/var/run/netns/x')
    assert.equal(a.ifName, 'eth0')
    assert.equal(a.args, 'K=V')
    assert.equal(a.path, '/opt/cni/bin')
    assert.deepEqual(a.config.ipam, {type: 'x'})
    assert.equal(a.getenv('CNI_ARGS'), 'K=V')
  })

  it('DEL, CHECK, STATUS and GC print nothing on success', async () => {
    for (const [cmd, env] of [
      ['DEL', addEnv({CNI_COMMAND: 'DEL'})],
      ['CHECK', addEnv({CNI_COMMAND: 'CHECK'})],
      ['STATUS', {CNI_COMMAND: 'STATUS'}],
      ['GC', {CNI_COMMAND: 'GC', CNI_PATH: '/p'}],
    ] as const) {
      const {calls, funcs} = recorder()
      const r = await runSkel(funcs, env, CONF('1.1.0'))
      assert.deepEqual([r.code, r.stdout], [0, ''], cmd)
      assert.equal(calls[0]!.command, cmd)
    }
  })

  it('missing optional handlers succeed', async () => {
    const funcs: PluginFuncs = {add: async () => RESULT, del: async () => {}}
    assert.equal((await runSkel(funcs, addEnv({CNI_COMMAND: 'CHECK'}), CONF('1.1.0'))).code, 0)
    assert.equal((await runSkel(funcs, {CNI_COMMAND: 'STATUS'}, CONF('1.1.0'))).code, 0)
  })

  it("prints a handler error as the error object, 4-space indented, in the config's version", async () => {
    const {funcs} = recorder({
      add: async () => {
        throw new ValidationError('pool <x> & "y" is bad')
      },
    })
    const r = await runSkel(funcs, addEnv(), CONF('0.4.0'))
    assert.equal(r.code, 1)
    assert.equal(
      r.stdout,
      '{\n    "cniVersion": "0.4.0",\n    "code": 7,\n    "msg": "pool \\u003cx\\u003e \\u0026 \\"y\\" is bad"\n}',
    )
  })

  it('maps typed errors and keeps CniError details', async () => {
    const unavailable = recorder({del: async () => Promise.reject(new DatastoreUnavailableError('etcd down'))}).funcs
    assert.deepEqual(errorOf(await runSkel(unavailable, addEnv({CNI_COMMAND: 'DEL'}), CONF())), {
      cniVersion: '1.0.0',
      code: 11,
      msg: 'etcd down',
    })
    const custom = recorder({check: async () => Promise.reject(new CniError(999, 'mismatch', 'more'))}).funcs
    assert.deepEqual(errorOf(await runSkel(custom, addEnv({CNI_COMMAND: 'CHECK'}), CONF())), {
      cniVersion: '1.0.0',
      code: 999,
      msg: 'mismatch',
      details: 'more',
    })
    const plain = recorder({add: async () => Promise.reject(new TypeError('boom'))}).funcs
    assert.deepEqual(errorOf(await runSkel(plain, addEnv(), CONF())), {cniVersion: '1.0.0', code: 999, msg: 'boom'})
  })

  it('handler log lines go to stderr only', async () => {
    const {funcs} = recorder({
      add: async (a) => {
        a.log('hello from the handler')
        return RESULT
      },
    })
    const r = await runSkel(funcs, addEnv(), CONF())
    assert.equal(r.stderr, 'hello from the handler\n')
    assert.doesNotThrow(() => JSON.parse(r.stdout))
  })
})
