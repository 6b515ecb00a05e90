// The `yaml` package, loaded on first use: loading it is ~20 ms of a CLI start, and most runs never read or write
// YAML (only config files, manifests and `-o yaml` do). createRequire keeps it out of the CLI bundle as well.
import {createRequire} from 'node:module'

type Yaml = typeof import('yaml')
let yaml: Yaml | undefined

export const loadYaml = (): Yaml => (yaml ??= createRequire(import.meta.url)('yaml') as Yaml)
