import pkg from '../../package.json' with {type: 'json'}

/**
 * Build facts for `/version` and `--version`. The standalone build replaces the `__TOOLGATE_*__`
 * globals through esbuild `define`; from source they fall back to package.json and the environment.
 */
declare const __TOOLGATE_VERSION__: string | undefined
declare const __TOOLGATE_COMMIT__: string | undefined
declare const __TOOLGATE_BUILD_DATE__: string | undefined

// A static JSON import (not a read next to the code at run time) so the bundler inlines it.
function packageVersion(): string {
  return pkg.version
}

export interface VersionInfo {
  version: string
  commit: string
  build_date: string
  node_version: string
  platform: string
}

export function versionInfo(): VersionInfo {
  return {
    version: typeof __TOOLGATE_VERSION__ === 'string' ? __TOOLGATE_VERSION__ : packageVersion(),
    commit:
      typeof __TOOLGATE_COMMIT__ === 'string'
        ? __TOOLGATE_COMMIT__
        : (process.env.TOOLGATE_COMMIT ?? 'unknown'),
    build_date:
      typeof __TOOLGATE_BUILD_DATE__ === 'string'
        ? __TOOLGATE_BUILD_DATE__
        : (process.env.TOOLGATE_BUILD_DATE ?? 'unknown'),
    node_version: process.version,
    platform: `${process.platform}/${process.arch}`,
  }
}

/**
 * `toolgate --version`: oclif's `<bin>/<version> <os>-<arch> node-<v>` (scripts may already match
 * its start) followed by the commit and the build date.
 */
export function versionLine(info: VersionInfo = versionInfo()): string {
  const platform = info.platform.replace('/', '-')
  return `toolgate/${info.version} ${platform} node-${info.node_version} commit ${info.commit} built ${info.build_date}`
}
