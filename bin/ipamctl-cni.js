#!/usr/bin/env node
// CNI plugin `ipamctl-cni` (accepts what calico accepts). Plain entry, no oclif: see src/lib/cni/cni-main.ts.
import {main} from '../dist/lib/cni/cni-main.js'

process.exitCode = await main()
setTimeout(() => process.exit(), 2000).unref()
