import {dirname, sep} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {findOnPath} from '../fs/path-lookup.ts'
import type {PermissionProfile} from './profile.ts'

/**
 * The Linux sandbox (issue 32): bubblewrap (`bwrap`). What the server gets:
 *
 * - a fresh mount namespace: the system directories read-only, a private /tmp, /proc and /dev of
 *   its own, `$HOME` replaced by an empty directory (no ~/.ssh, no browser profile, no toolgate
 *   state, secrets or keyring), and nothing else of the host but what the profile names (`read`
 *   read-only, `write` read-write), the runtime and the files of its own command line. Other
 *   users' homes, /root and /run (the D-Bus session bus, the keyring) are not there; toolgate's
 *   own directories are masked even inside a path the profile names;
 * - PID, IPC, UTS and user namespaces, no new privileges, killed when toolgate goes
 *   (`--die-with-parent`);
 * - its own network namespace with loopback only, unless the profile allows all outbound
 *   traffic; the init listens on the egress port there and hands the listening socket to
 *   toolgate's egress proxy (init-source.ts);
 * - as root, the server runs as an unprivileged user (uid/gid 65534): bwrap sets the sandbox up
 *   with root's rights and setpriv drops them inside before anything of the server runs. (A user
 *   namespace of root's would only rename root, who could still read /etc/shadow.)
 */

export interface BwrapPlan {
  profile: PermissionProfile
  /** The server's executable (absolute) and arguments. */
  command: string
  args: string[]
  cwd: string
  /** The user's home: an empty directory inside. */
  home: string
  /** Read-only beyond the profile: the runtime, installed packages, command-line files. */
  extraRead: string[]
  /** toolgate's own directories: never visible, even inside a bound path. */
  hidden: string[]
  /** The init program to start inside (init-source.ts) and the egress port it listens on. */
  init: {command: string; args: string[]}
  egressPort?: number | undefined
  /** Run the server as this user (toolgate runs as root). */
  dropTo?: {uid: number; gid: number} | undefined
}

/** System directories, read-only (those that exist). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc']

type Mount = {kind: 'ro' | 'rw'; path: string}

/** The bwrap command line (and the privilege drop in it) for a plan. */
export function bwrapCommand(bwrap: string, plan: BwrapPlan): {command: string; args: string[]} {
  const a: string[] = [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'toolgate-sandbox',
  ]
  // Unprivileged, bwrap needs a user namespace; as root it runs privileged (it can then bind
  // what root can read) and the server drops to plan.dropTo inside, before it starts.
  if (!plan.dropTo) a.push('--unshare-user')
  a.push(plan.profile.network.allowAll ? '--share-net' : '--unshare-net')
  for (const d of SYSTEM_DIRS) a.push('--ro-bind-try', d, d)
  a.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp')
  a.push('--perms', '0777', '--tmpfs', plan.home)
  // Bound trees (whatever is below them exists) and directories that exist but are empty (the
  // tmpfs mounts, and those made on the way to mount points).
  const mounted = [...SYSTEM_DIRS, '/proc', '/dev']
  const made = new Set<string>(['/tmp', plan.home])
  const makeDir = (dir: string) => {
    const parts = dir.split(sep).filter(Boolean)
    for (let i = 1; i <= parts.length; i++) {
      const d = sep + parts.slice(0, i).join(sep)
      if (made.has(d) || mounted.some((m) => inside(d, m))) continue
      // Traversable: bwrap would copy the source's modes, and /root is 0700.
      a.push('--perms', '0755', '--dir', d)
      made.add(d)
    }
  }
  const seen = new Set<string>()
  const mounts: Mount[] = []
  const add = (kind: Mount['kind'], path: string) => {
    if (seen.has(path)) return
    seen.add(path)
    mounts.push({kind, path})
  }
  for (const p of plan.profile.write) add('rw', p)
  for (const p of [...plan.extraRead, ...plan.profile.read]) add('ro', p)
  // Parents before children, so a `write` path inside a `read` one stays writable.
  mounts.sort((x, y) => x.path.split(sep).length - y.path.split(sep).length)
  for (const m of mounts) {
    makeDir(dirname(m.path))
    a.push(m.kind === 'ro' ? '--ro-bind-try' : '--bind-try', m.path, m.path)
    mounted.push(m.path)
  }
  // Masked after the binds: a profile that names $HOME/.. or a parent of toolgate's state still
  // never shows the state, secrets or config.
  const bound = mounts.map((m) => m.path)
  for (const h of plan.hidden) if (bound.some((b) => inside(h, b))) a.push('--tmpfs', h)
  // The working directory is the same path inside (made empty when nothing bound it), so relative
  // paths on the command line, which were bound, still resolve.
  makeDir(plan.cwd)
  a.push('--chdir', plan.cwd)
  a.push('--')
  if (plan.dropTo) {
    // setpriv (util-linux): the uid, gid and groups of an unprivileged user, no capabilities
    // (also none to inherit or regain), no new privileges.
    a.push(
      'setpriv',
      '--reuid',
      String(plan.dropTo.uid),
      '--regid',
      String(plan.dropTo.gid),
      '--clear-groups',
      '--no-new-privs',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--',
    )
  }
  a.push(
    plan.init.command,
    ...plan.init.args,
    plan.egressPort === undefined ? '-' : String(plan.egressPort),
    plan.command,
    ...plan.args,
  )
  return {command: bwrap, args: a}
}

/** Whether `path` is `dir` or below it. */
export function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

/** The bwrap executable on PATH; a clear error naming the package when there is none. */
export function findBwrap(env: NodeJS.ProcessEnv = process.env): string {
  const found = findOnPath('bwrap', env)
  if (found) return found
  throw new ToolgateError(
    'ERR_SANDBOX_UNAVAILABLE',
    '--sandbox: bubblewrap (bwrap) is not installed, and toolgate never runs a server unconfined because of that. Install it: apt install bubblewrap (Debian, Ubuntu), dnf install bubblewrap (Fedora), pacman -S bubblewrap (Arch), apk add bubblewrap (Alpine)',
  )
}
