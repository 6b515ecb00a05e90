#!/usr/bin/env node
// CNI plugin `ipamctl-cni` (accepts what calico accepts); see bin/plugin.cjs.
require('./plugin.cjs').run('ipamctl-cni')
