import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base.js'
import {parseDuration} from '../../lib/ipam/gc.js'
import {DEFAULT_CNI_LOG_FILE} from '../../lib/log/cni.js'
import {readPodStory} from '../../lib/log/read.js'

export default class CniLogs extends BaseCommand {
  static override summary = "Show one pod's story from the CNI plugins' log file (and its rotations), in time order."
  static override description =
    'Reads the file the netconf names in log_file_path (Calico: /var/log/calico/cni/cni.log) and its rotations <file>.1 … <file>.N, ' +
    'oldest first, and prints the lines of one container or pod ordered by time: block claimed, addresses assigned, interface ' +
    'and routes created, rollback and why, agent used or not. --pod also shows lines of the pod’s containers that do not name it. ' +
    'Without filters it prints every line. Reads only.'
  static override examples = [
    '<%= config.bin %> <%= command.id %> --pod default/web-0',
    '<%= config.bin %> <%= command.id %> --container 3f2a9c… --since 10m',
    '<%= config.bin %> <%= command.id %> --pod kube-system/coredns-abc --log-file /var/log/calico/cni/cni.log',
  ]
  static override flags = {
    container: Flags.string({summary: 'Only lines of this container ID (CNI_CONTAINERID).'}),
    pod: Flags.string({summary: 'Only lines of this pod, as NAMESPACE/NAME.'}),
    since: Flags.string({summary: 'Only lines of the last DURATION (Go duration: 10m, 1h30m).'}),
    'log-file': Flags.string({summary: 'The plugin log file.', default: DEFAULT_CNI_LOG_FILE}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CniLogs)
    const since = flags.since === undefined ? undefined : new Date(Date.now() - parseDuration(flags.since))
    const lines = readPodStory(flags['log-file'], {container: flags.container, pod: flags.pod, since})
    this.out(lines.map((l) => `${l}\n`).join(''))
  }
}
