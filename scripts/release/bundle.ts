/**
 * esbuild bundle of the CLI for one target: scripts/sea-entry.ts (oclif + the COMMANDS map + every
 * library) into one minified CommonJS file — Node single executables run a CommonJS main script.
 * The Cedar wasm is embedded in every target, the target's own native addons in its variant
 * (scripts/sea/plugins.ts).
 */
import {build, type Metafile} from 'esbuild'
import {join} from 'node:path'
import {
  nativeAddonPlugin,
  targetAddonPlugin,
  wasmBindgenPlugin,
  wasmFilePlugin,
} from '../sea/plugins.ts'
import {NATIVE_LOADERS, ROOT} from './targets.ts'

export interface BuildFacts {
  version: string
  commit: string
  /** ISO 8601; the commit's date, so two builds of one commit are identical. */
  buildDate: string
}

export interface Bundle {
  file: string
  /** SEA asset key → absolute path of the file to embed. */
  assets: Map<string, string>
  metafile: Metafile
}

export async function bundle(
  outfile: string,
  facts: BuildFacts,
  addonDirs: Map<string, string>,
): Promise<Bundle> {
  const assets = new Map<string, string>()
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, 'scripts', 'sea-entry.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    logLevel: 'error',
    legalComments: 'none',
    // The embedded script is never debugged in place: no source map, smallest text, but class
    // and function names kept (oclif and error messages print them).
    sourcemap: false,
    minify: true,
    keepNames: true,
    metafile: true,
    // oclif requires `typescript` (inside a try) only to transpile commands on the fly, which the
    // binary never does (sea-entry turns auto-transpile off); bundling it would add 9 MB.
    external: ['typescript'],
    // jsonc-parser's `main` is a UMD build whose require() calls esbuild cannot follow (the
    // executable then failed with "No such built-in module: ./impl/format"); its ESM build bundles.
    alias: {'jsonc-parser': 'jsonc-parser/lib/esm/main.js'},
    define: {
      __TOOLGATE_VERSION__: JSON.stringify(facts.version),
      __TOOLGATE_COMMIT__: JSON.stringify(facts.commit),
      __TOOLGATE_BUILD_DATE__: JSON.stringify(facts.buildDate),
      // ESM sources use import.meta; in the CommonJS bundle it points at the executable itself.
      'import.meta.url': '__toolgate_import_meta_url',
      'import.meta.filename': '__toolgate_import_meta_filename',
      'import.meta.dirname': '__toolgate_import_meta_dirname',
    },
    banner: {
      js: [
        'var __toolgate_import_meta_filename = process.execPath;',
        'var __toolgate_import_meta_dirname = require("node:path").dirname(process.execPath);',
        'var __toolgate_import_meta_url = require("node:url").pathToFileURL(process.execPath).href;',
      ].join('\n'),
    },
    plugins: [
      targetAddonPlugin(NATIVE_LOADERS, addonDirs),
      nativeAddonPlugin(assets),
      wasmBindgenPlugin(assets),
      wasmFilePlugin(assets),
    ],
  })
  return {file: outfile, assets, metafile: result.metafile}
}
