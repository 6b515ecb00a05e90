// Dependency rules for src/, checked by `npm run deps` (dependency-cruiser) in `.ci/run`. The folders form one
// stack (docs/architecture.md): a folder may import only folders below it, so there is no cycle between
// folders and no upward import. To let a folder use one that is above it, move the code, or move the folder
// in LAYERS — deliberately, with docs/architecture.md updated in the same change.
const LAYERS = [
  'src/commands', // oclif commands: parse flags, call lib, render
  'src/cli', // the command base class, rendering, prompts
  'src/plugins/main', // the ipamctl-cni plugin (and `cni add|del|check` by hand)
  'src/plugins/ipam', // the ipamctl-ipam plugin
  'src/lib/install', // cni install/uninstall: the self-contained plugin runtime under a prefix
  'src/lib/agent', // the per-node agent daemon
  'src/lib/resources', // projectcalico.org/v3 resources: get/apply/patch/label, export/import
  'src/lib/node-ipam', // the node-level IPAM service shared by the plugins and the agent
  'src/lib/agent-client', // the agent's wire protocol and client
  'src/lib/dataplane', // netlink pod wiring
  'src/lib/ipam', // the IPAM core
  'src/lib/workload', // WorkloadEndpoint records
  'src/lib/cni', // the CNI specification library
  'src/lib/store', // datastores
  'src/lib/format', // number and suggestion formatting
  'src/lib/log', // the plugins' and the agent's logger and log file
  'src/lib/codec', // Go-compatible JSON, Go times, YAML, SHA-1
  'src/lib/net', // address math
  'src/lib', // errors, args, files, interrupts: imported by all
]

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
// A module's layer is the most specific LAYERS entry containing it ("src/lib/x.ts" is in "src/lib").
const inLayer = (i) => {
  const deeper = LAYERS.filter((l, j) => j !== i && l.startsWith(`${LAYERS[i]}/`))
  return {path: `^${esc(LAYERS[i])}/`, pathNot: deeper.map((d) => `^${esc(d)}/`)}
}

const upward = LAYERS.flatMap((_, i) =>
  LAYERS.slice(0, i).map((above, j) => ({
    name: `no-upward-import`,
    comment: `${LAYERS[i]} is below ${above}: it must not import it (see LAYERS in .dependency-cruiser.cjs)`,
    severity: 'error',
    from: inLayer(i),
    to: inLayer(j),
  })),
)

// A folder missing from LAYERS would count as src/lib itself and fail on every import with a misleading reason.
const unlisted = {
  name: 'folder-not-in-layers',
  comment: 'every folder of src/ must be listed in LAYERS of .dependency-cruiser.cjs (and docs/architecture.md)',
  severity: 'error',
  from: {path: '^src/(lib|plugins)/[^/]+/', pathNot: LAYERS.filter((l) => l.split('/').length > 2).map((l) => `^${esc(l)}/`)},
  to: {path: '.'},
}

module.exports = {
  forbidden: [
    unlisted,
    ...upward,
    {
      name: 'no-circular',
      comment: 'modules must not import each other in a cycle',
      severity: 'error',
      from: {path: '^src/'},
      to: {circular: true},
    },
    {
      name: 'lib-no-cli-packages',
      comment: 'src/lib never imports oclif, chalk, inquirer or cli-table3 (they belong to commands and cli)',
      severity: 'error',
      from: {path: '^src/(lib|plugins)/'},
      // Matched by name too: the resolver does not resolve @oclif/core's exports map, and tsc resolves it anyway.
      to: {path: '(^|node_modules/)(@oclif|chalk|@inquirer|inquirer|cli-table3)(/|$)'},
    },
    {
      name: 'not-to-dev-dep',
      comment: 'shipped code must not import a devDependency',
      severity: 'error',
      from: {path: '^src/'},
      to: {dependencyTypes: ['npm-dev']},
    },
  ],
  options: {
    doNotFollow: {path: 'node_modules'},
    includeOnly: '^(src/|node_modules/|@oclif/|chalk|@inquirer/|inquirer|cli-table3)',
    tsPreCompilationDeps: true,
    tsConfig: {fileName: 'tsconfig.json'},
    enhancedResolveOptions: {extensions: ['.ts', '.js'], conditionNames: ['import', 'require', 'node', 'default', 'types']},
    moduleSystems: ['es6', 'cjs'],
  },
}
