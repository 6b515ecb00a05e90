#!/usr/bin/env node
// CNI IPAM plugin `ipamctl-ipam` (accepts what calico-ipam accepts). Plain entry, no oclif: see
// src/lib/cni/ipam-main.ts.
import {main} from '../dist/lib/cni/ipam-main.js'

process.exitCode = await main()
// Everything is closed by now, so the process ends on its own; should a library leave a handle open, do
// not let it keep the runtime waiting.
setTimeout(() => process.exit(), 2000).unref()
