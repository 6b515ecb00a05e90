// A copy of this built checkout somewhere else, to install from and then delete: what `cni install` copies must
// not depend on the place it came from. The build output is copied; node_modules and native/ (large, and only read)
// are hard-linked where the filesystem allows, so deleting the copy leaves this checkout's files alone.
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {ROOT} from '../commands/helpers.ts'

export function copyCheckout(dest: string, opts: {version?: string} = {}): string {
  fs.mkdirSync(dest, {recursive: true})
  const present = (f: string) => fs.existsSync(path.join(ROOT, f))
  const copied = ['bin', 'dist', 'man', 'scripts', 'package.json', 'oclif.manifest.json'].filter(present)
  execFileSync('cp', ['-a', ...copied.map((f) => path.join(ROOT, f)), dest])
  for (const f of ['node_modules', 'native'])
    try {
      execFileSync('cp', ['-al', path.join(ROOT, f), dest], {stdio: 'pipe'})
    } catch {
      fs.rmSync(path.join(dest, f), {recursive: true, force: true})
      execFileSync('cp', ['-a', path.join(ROOT, f), dest])
    }
  if (opts.version) {
    const file = path.join(dest, 'package.json')
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as {version: string}
    fs.writeFileSync(file, `${JSON.stringify({...pkg, version: opts.version}, null, 2)}\n`)
  }
  return dest
}

/** `ls -lR`-like listing of a directory (names, link targets, sizes of files), or 'absent'. */
export function listing(dir: string): string[] | 'absent' {
  if (!fs.existsSync(dir)) return 'absent'
  const out: string[] = []
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d).sort()) {
      const p = path.join(d, e)
      const st = fs.lstatSync(p)
      const rel = path.relative(dir, p)
      if (st.isSymbolicLink()) out.push(`${rel} -> ${fs.readlinkSync(p)}`)
      else if (st.isDirectory()) {
        out.push(`${rel}/`)
        walk(p)
      } else out.push(`${rel} ${st.size} ${st.mode.toString(8)}`)
    }
  }
  walk(dir)
  return out
}

/**
 * `npm pack` of a copy of this built checkout (with `version` if given) into `destDir`: prepack's step
 * (scripts/vendor-addons.mjs) run by hand, and --ignore-scripts to skip prepare's `npm run build`, which
 * ensureBuilt has done. Returns the tarball's path.
 */
export function packCopy(destDir: string, version?: string): string {
  const copy = copyCheckout(fs.mkdtempSync(path.join(destDir, 'checkout-')), {version})
  execFileSync(process.execPath, [path.join(copy, 'scripts', 'vendor-addons.mjs')])
  const name = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', destDir], {
    cwd: copy,
    encoding: 'utf8',
  }).trim()
  fs.rmSync(copy, {recursive: true, force: true})
  return path.join(destDir, name)
}
