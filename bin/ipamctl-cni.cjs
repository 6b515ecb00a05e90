#!/usr/bin/env node
// CNI plugin `ipamctl-cni` (accepts what calico accepts); see bin/start.cjs.
require('./start.cjs').runPlugin('ipamctl-cni')
