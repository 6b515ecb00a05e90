#!/usr/bin/env node
// CNI IPAM plugin `ipamctl-ipam` (accepts what calico-ipam accepts); see bin/start.cjs.
require('./start.cjs').runPlugin('ipamctl-ipam')
