#!/usr/bin/env node
// CNI IPAM plugin `ipamctl-ipam` (accepts what calico-ipam accepts); see bin/plugin.cjs.
require('./plugin.cjs').run('ipamctl-ipam')
