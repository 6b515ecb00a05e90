// PluginDatastore and the plugin's log: a datastore password known only from the settings (an ipamctl_config
// file) is redacted like the netconf's and the environment's; the agent fallback is a warning with its reason.
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {systemClock} from '../../../src/lib/clock.ts'
import {createLogger, REDACTED} from '../../../src/lib/log/logger.ts'
import {PluginDatastore} from '../../../src/lib/node-ipam/plugin-datastore.ts'
import {ipamRequest} from '../../../src/lib/node-ipam/locked-request.ts'
import type {DatastoreSettings} from '../../../src/lib/store/settings.ts'

test("the settings' etcd password never reaches a line; an unanswered agent is a warning with its reason", async () => {
  const lines: string[] = []
  const logger = createLogger({level: 'debug', component: 'ipamctl-ipam DEL', sinks: [{write: (l) => lines.push(l)}]})
  const req = ipamRequest(
    {
      command: 'DEL',
      containerId: 'c1',
      netns: '',
      ifName: 'eth0',
      args: '',
      path: '',
      stdinData: Buffer.from(''),
      config: {cniVersion: '1.0.0', name: 'net', type: 'ipamctl-ipam', nodename: 'n1', ipam: {type: 'ipamctl-ipam'}},
      cniVersion: '1.0.0',
      getenv: () => undefined,
      log: (l) => logger.info(l),
      logger,
    },
    {lock: false},
  )
  const settings: DatastoreSettings = {
    type: 'etcdv3',
    path: '',
    etcdEndpoints: ['http://127.0.0.1:1'],
    etcdPassword: 'from-a-config-file-7d1e',
    timeoutMs: 1000,
    sources: {},
  }
  const failing = () => Promise.reject(new Error('cannot connect with password from-a-config-file-7d1e'))
  await assert.rejects(
    PluginDatastore.using(
      req,
      settings,
      '/nonexistent/agent.sock',
      {open: failing, clock: systemClock, verb: 'del'},
      (ds) => ds.ipamDel(),
    ),
  )
  logger.error('cannot connect with password from-a-config-file-7d1e')
  const text = lines.join('')
  assert.ok(!text.includes('from-a-config-file-7d1e'), text)
  assert.ok(text.includes(`password ${REDACTED}`))
  assert.match(
    text,
    /\[WARNING\].*: ipamctl agent at \/nonexistent\/agent\.sock: .*; using the datastore directly fallback=\w+/,
  )
})
