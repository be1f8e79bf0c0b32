/**
 * CycloneDX 1.5 SBOM of what the executables contain: every npm package esbuild bundled (read from
 * the bundle's metafile, so only code that is really in the binary is listed), each target's native
 * addon packages and its Node runtime. Versions, licenses and integrities come from the installed
 * package.json files and package-lock.json. The serial number is derived from the content and the
 * timestamp is the build date, so the same commit gives the same SBOM.
 */
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import type {Built} from './build.ts'
import type {BuildFacts} from './bundle.ts'
import {addonPackages, ROOT, runtimeFor} from './targets.ts'

interface Component {
  type: 'library' | 'application'
  'bom-ref': string
  name: string
  version: string
  purl: string
  licenses?: {license: {id?: string; name?: string}}[]
  hashes?: {alg: 'SHA-512' | 'SHA-256'; content: string}[]
  properties?: {name: string; value: string}[]
}

function purl(name: string, version: string): string {
  return `pkg:npm/${name.replace('@', '%40')}@${version}`
}

function sha512Hex(integrity: string | undefined): Component['hashes'] {
  if (!integrity?.startsWith('sha512-')) return undefined
  return [{alg: 'SHA-512', content: Buffer.from(integrity.slice(7), 'base64').toString('hex')}]
}

function license(value: unknown): Component['licenses'] {
  if (typeof value !== 'string' || value === '') return undefined
  return /^[A-Za-z0-9.+-]+$/.test(value) ? [{license: {id: value}}] : [{license: {name: value}}]
}

/** `node_modules/a/node_modules/@b/c/x.js` → `node_modules/a/node_modules/@b/c` */
function packageDir(input: string): string | undefined {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input)
  return m?.[1]
}

export function sbom(built: Built[], facts: BuildFacts): object {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, {version: string; integrity?: string; license?: string}>
  }
  const components = new Map<string, Component>()
  for (const b of built) {
    for (const input of Object.keys(b.bundle.metafile.inputs)) {
      const dir = packageDir(input.replace(/^.*?(node_modules\/)/, '$1'))
      if (!dir || !dir.startsWith('node_modules/')) continue
      const pj = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as {
        name: string
        version: string
        license?: unknown
      }
      const ref = purl(pj.name, pj.version)
      if (components.has(ref)) continue
      components.set(ref, {
        type: 'library',
        'bom-ref': ref,
        name: pj.name,
        version: pj.version,
        purl: ref,
        licenses: license(pj.license),
        hashes: sha512Hex(lock.packages[dir]?.integrity),
      })
    }
    for (const p of addonPackages(b.target)) {
      const ref = purl(p.name, p.version)
      components.set(ref, {
        type: 'library',
        'bom-ref': ref,
        name: p.name,
        version: p.version,
        purl: ref,
        licenses: license(lock.packages[`node_modules/${p.name}`]?.license),
        hashes: sha512Hex(p.integrity),
        properties: [{name: 'toolgate:target', value: b.target.id}],
      })
    }
    const rt = runtimeFor(b.target.id)
    const ref = purl(rt.name, rt.version)
    components.set(ref, {
      type: 'application',
      'bom-ref': ref,
      name: rt.name,
      version: rt.version,
      purl: ref,
      licenses: [{license: {id: 'MIT'}}],
      hashes: [...(sha512Hex(rt.integrity) ?? []), {alg: 'SHA-256', content: rt.binarySha256}],
      properties: [
        {name: 'toolgate:target', value: b.target.id},
        {name: 'toolgate:runtime-binary', value: rt.binary},
      ],
    })
  }
  const list = [...components.values()].sort((a, b) => (a['bom-ref'] < b['bom-ref'] ? -1 : 1))
  const digest = createHash('sha256')
    .update(JSON.stringify([facts, list]))
    .digest('hex')
  const uuid = `${digest.slice(0, 8)}-${digest.slice(8, 12)}-5${digest.slice(13, 16)}-8${digest.slice(17, 20)}-${digest.slice(20, 32)}`
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {license?: string}
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    serialNumber: `urn:uuid:${uuid}`,
    version: 1,
    metadata: {
      timestamp: facts.buildDate,
      component: {
        type: 'application',
        'bom-ref': purl('toolgate', facts.version),
        name: 'toolgate',
        version: facts.version,
        purl: purl('toolgate', facts.version),
        licenses: license(pkg.license),
        properties: [{name: 'toolgate:commit', value: facts.commit}],
      },
    },
    components: list,
    dependencies: [
      {ref: purl('toolgate', facts.version), dependsOn: list.map((c) => c['bom-ref'])},
    ],
  }
}
