/**
 * esbuild plugins that make packages with non-JS payloads bundle-safe. Each records the files to
 * embed in `assets` (SEA asset key → absolute path on disk); the build passes that map to
 * `--experimental-sea-config`. Owners of other areas just import their packages.
 *
 * - any `*.node` native addon (e.g. @napi-rs/keyring's prebuilt binding) → embedded, written to a
 *   per-user cache dir at first use and loaded with `process.dlopen` (runtime.ts);
 * - any `*.wasm` file imported from JS → its bytes as a `Uint8Array`;
 * - wasm-bindgen packages built for the `nodejs` target (they `readFileSync` a .wasm next to their
 *   JS, which does not exist in a single file) → their `web` build, initialised synchronously with
 *   the embedded bytes (`initSync`), re-exporting the same API.
 */
import type {Plugin} from 'esbuild'
import {readFileSync} from 'node:fs'
import {basename, dirname, join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const runtime = join(here, 'runtime.ts')
const root = join(here, '..', '..')

export interface WasmBindgenPackage {
  /** Import specifiers to redirect (the package root and its nodejs build). */
  specifiers: string[]
  /** The `web` build, which exports `initSync`. */
  web: string
  /** The .wasm file, next to the web build's JS. */
  wasm: string
  package: string
}

export const WASM_BINDGEN_PACKAGES: WasmBindgenPackage[] = [
  {
    package: '@cedar-policy/cedar-wasm',
    specifiers: ['@cedar-policy/cedar-wasm', '@cedar-policy/cedar-wasm/nodejs'],
    web: '@cedar-policy/cedar-wasm/web',
    wasm: 'cedar_wasm_bg.wasm',
  },
]

/**
 * The path the bundle records for an asset's plain-node fallback: relative to the repository, so
 * the bundle (and the executable) has the same bytes whichever directory it was built in.
 */
function recorded(path: string): string {
  return relative(root, path).split('\\').join('/')
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

export function nativeAddonPlugin(assets: Map<string, string>): Plugin {
  return {
    name: 'toolgate-native-addon',
    setup(build) {
      build.onLoad({filter: /\.node$/}, (args) => {
        const key = `native/${basename(args.path)}`
        assets.set(key, args.path)
        return {
          loader: 'js',
          contents: `module.exports = require(${JSON.stringify(runtime)}).loadNativeAddon(${JSON.stringify(key)}, ${JSON.stringify(recorded(args.path))})`,
        }
      })
    },
  }
}

export function wasmFilePlugin(assets: Map<string, string>): Plugin {
  return {
    name: 'toolgate-wasm-file',
    setup(build) {
      build.onLoad({filter: /\.wasm$/}, (args) => {
        const key = `wasm/${basename(args.path)}`
        assets.set(key, args.path)
        return {
          loader: 'js',
          contents: `module.exports = require(${JSON.stringify(runtime)}).getAssetBytes(${JSON.stringify(key)}, ${JSON.stringify(recorded(args.path))})`,
        }
      })
    },
  }
}

export function wasmBindgenPlugin(
  assets: Map<string, string>,
  packages = WASM_BINDGEN_PACKAGES,
): Plugin {
  return {
    name: 'toolgate-wasm-bindgen',
    setup(build) {
      for (const pkg of packages) {
        const filter = new RegExp(`^(${pkg.specifiers.map(escape).join('|')})$`)
        build.onResolve({filter}, () => ({path: pkg.package, namespace: 'toolgate-wasm-bindgen'}))
      }
      build.onLoad({filter: /.*/, namespace: 'toolgate-wasm-bindgen'}, async (args) => {
        const pkg = packages.find((p) => p.package === args.path)
        if (!pkg) return undefined
        // Resolve through esbuild so package `exports` maps are honoured.
        const web = await build.resolve(pkg.web, {kind: 'import-statement', resolveDir: root})
        if (web.errors.length > 0) return {errors: web.errors}
        const wasmPath = join(dirname(web.path), pkg.wasm)
        const key = `wasm/${pkg.package.replace(/[@/]/g, '_')}/${basename(wasmPath)}`
        assets.set(key, wasmPath)
        return {
          loader: 'js',
          resolveDir: root,
          contents: [
            `import {initSync} from ${JSON.stringify(pkg.web)}`,
            `import {getAssetBytes} from ${JSON.stringify(runtime)}`,
            `initSync({module: getAssetBytes(${JSON.stringify(key)}, ${JSON.stringify(recorded(wasmPath))})})`,
            `export * from ${JSON.stringify(pkg.web)}`,
          ].join('\n'),
        }
      })
    },
  }
}

/**
 * Cross-building: napi-rs loaders (`@napi-rs/keyring`, `@ngrok/ngrok`) pick their binding at run
 * time from `process.platform`/`arch`, trying `./<name>.<platform>.node` then the package
 * `<loader>-<platform>`, each inside try/catch. For one target, that target's package resolves to
 * its verified copy (`addonDirs`, package name → unpacked directory), so its `.node` is embedded by
 * nativeAddonPlugin; every other platform's package and every local `.node` stays an unresolved
 * `require` that throws inside the loader's own try/catch and is never reached on that target.
 */
export function targetAddonPlugin(loaders: string[], addonDirs: Map<string, string>): Plugin {
  const pattern = new RegExp(`^(${loaders.map(escape).join('|')})-([a-z0-9-]+?)(/package\\.json)?$`)
  return {
    name: 'toolgate-target-addons',
    setup(build) {
      build.onResolve({filter: /^(@napi-rs\/keyring|@ngrok\/ngrok)-/}, (args) => {
        const m = pattern.exec(args.path)
        if (!m) return undefined
        const dir = addonDirs.get(`${m[1]}-${m[2]}`)
        if (!dir) return {path: args.path, external: true}
        if (m[3]) return {path: join(dir, 'package.json')}
        const main = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {main: string})
          .main
        return {path: join(dir, main)}
      })
      build.onResolve({filter: /^\.\/(keyring|ngrok)\.[a-z0-9-]+\.node$/}, (args) => ({
        path: args.path,
        external: true,
      }))
    },
  }
}
