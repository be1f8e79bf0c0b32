#!/bin/sh
# Installs the toolgate standalone executable (no Node.js needed) on Linux and macOS.
#
#   curl -fsSL https://github.com/toolgate/toolgate/releases/latest/download/install.sh | sh
#   sh install.sh [--version X.Y.Z] [--base-url URL] [--prefix DIR] [--insecure]
#
# It detects the OS and CPU, downloads SHA256SUMS and this platform's archive from the base URL
# (--base-url, else $TOOLGATE_INSTALL_BASE_URL, else the project's release page), checks the
# archive against SHA256SUMS, and only then installs `toolgate` into DIR (default ~/.local/bin).
# Nothing unverified is ever run or installed; on any error nothing is installed.
# POSIX sh only (dash, busybox ash, bash, zsh): no arrays, no `local`, no bashisms.
set -eu

RELEASES="https://github.com/toolgate/toolgate/releases"
version=""
base_url="${TOOLGATE_INSTALL_BASE_URL:-}"
prefix="${HOME:-}/.local/bin"
insecure=0

die() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat <<'EOF'
Usage: install.sh [--version X.Y.Z] [--base-url URL] [--prefix DIR] [--insecure]

  --version X.Y.Z  the release to install (default: the latest)
  --base-url URL   where the release files and SHA256SUMS are, https (plain http only on
                   this machine's loopback, or with --insecure)
                   (default: $TOOLGATE_INSTALL_BASE_URL, else the project's release page)
  --prefix DIR     the directory to install `toolgate` into (default: ~/.local/bin)
  --insecure       accept a plain-http base URL on another host
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || die "--version needs a value"; version="$2"; shift 2 ;;
    --version=*) version="${1#*=}"; shift ;;
    --base-url) [ $# -ge 2 ] || die "--base-url needs a value"; base_url="$2"; shift 2 ;;
    --base-url=*) base_url="${1#*=}"; shift ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --insecure) insecure=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

case "$version" in
  "" | [0-9]*.[0-9]*.[0-9]*) ;;
  *) die "--version must look like 1.2.3 (got \"$version\")" ;;
esac
case "$version" in *[!0-9A-Za-z.+-]*) die "--version has characters a version never has: \"$version\"" ;; esac
[ -n "$prefix" ] || die "no install directory: HOME is not set; pass --prefix DIR"

if [ -z "$base_url" ]; then
  if [ -n "$version" ]; then base_url="$RELEASES/download/v$version"; else base_url="$RELEASES/latest/download"; fi
fi
case "$base_url" in
  https://*) ;;
  http://*)
    # Plain http lets anyone on the path swap the archive and SHA256SUMS together, so the
    # checksum proves nothing: only this machine's loopback, or when the user says so.
    hostport="${base_url#http://}"
    hostport="${hostport%%/*}"
    port=""
    case "$hostport" in
      127.0.0.1 | localhost | "[::1]") ;;
      127.0.0.1:* | localhost:* | "[::1]":*) port="${hostport##*:}" ;;
      *) hostport="" ;;
    esac
    case "$port" in *[!0-9]*) hostport="" ;; esac
    if [ -z "$hostport" ] && [ "$insecure" != 1 ]; then
      die "--base-url $base_url is plain http: anyone on the network path could replace the download and its SHA256SUMS together. Use https, or pass --insecure to accept that"
    fi
    ;;
  *) die "--base-url must be an http(s) URL (got \"$base_url\")" ;;
esac
base_url="${base_url%/}"

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  MINGW* | MSYS* | CYGWIN* | Windows_NT) die "on Windows use install.ps1 (PowerShell)" ;;
  *) die "no toolgate build for $(uname -s); install with npm instead: npm install -g toolgate" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no toolgate build for the $(uname -m) CPU; install with npm instead: npm install -g toolgate" ;;
esac
# A shell under Rosetta 2 reports x86_64 on an Apple Silicon Mac: prefer the native build.
if [ "$os" = darwin ] && [ "$arch" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then
  arch=arm64
fi

if command -v curl >/dev/null 2>&1; then
  fetch() { curl --fail --silent --show-error --location --retry 2 --connect-timeout 20 --max-time 600 --output "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget --quiet --tries=3 --timeout=60 --output-document="$2" "$1"; }
else
  die "needs curl or wget to download"
fi

if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
elif command -v openssl >/dev/null 2>&1; then
  sha256() { openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1; }
else
  die "needs sha256sum, shasum or openssl to verify the download"
fi

tmp="$(mktemp -d 2>/dev/null || mktemp -d -t toolgate-install)"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

fetch "$base_url/SHA256SUMS" "$tmp/SHA256SUMS" || die "could not download $base_url/SHA256SUMS"

# The archive of this platform named in SHA256SUMS: exactly one line "<sha256>  <file>".
pattern="toolgate-${version:-[0-9][0-9A-Za-z.+-]*}-$os-$arch\\.tar\\.gz"
matches="$(grep -E "^[0-9a-f]{64}  $pattern\$" "$tmp/SHA256SUMS" || true)"
[ -n "$matches" ] || die "$base_url/SHA256SUMS lists no toolgate${version:+ $version} archive for $os-$arch"
[ "$(printf '%s\n' "$matches" | wc -l)" -eq 1 ] || die "$base_url/SHA256SUMS lists several versions for $os-$arch; pass --version"
expected="${matches%% *}"
archive="${matches##* }"

fetch "$base_url/$archive" "$tmp/$archive" || die "could not download $base_url/$archive"
actual="$(sha256 "$tmp/$archive")"
if [ "$actual" != "$expected" ]; then
  die "checksum mismatch for $archive: SHA256SUMS says $expected, the download is $actual. Nothing was installed."
fi

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" toolgate || die "$archive does not contain toolgate"
[ -f "$tmp/x/toolgate" ] && [ ! -L "$tmp/x/toolgate" ] || die "$archive: toolgate is not a regular file"
chmod 755 "$tmp/x/toolgate"

# macOS runs only signed executables on Apple Silicon; an unsigned release gets a local ad-hoc
# signature (what scripts/sign-macos.sh does) now that its checksum is verified.
if [ "$os" = darwin ] && command -v codesign >/dev/null 2>&1 && ! codesign --verify "$tmp/x/toolgate" 2>/dev/null; then
  codesign --sign - --force "$tmp/x/toolgate" >/dev/null 2>&1 || die "could not sign toolgate with codesign (see docs/distribution.md)"
fi

mkdir -p "$prefix" || die "cannot create $prefix"
# Copy next to the target, then rename: a running toolgate is never half-overwritten.
cp "$tmp/x/toolgate" "$prefix/.toolgate.install.$$" || die "cannot write to $prefix"
mv -f "$prefix/.toolgate.install.$$" "$prefix/toolgate" || {
  rm -f "$prefix/.toolgate.install.$$"
  die "cannot write $prefix/toolgate"
}

installed="$(basename "$archive" .tar.gz)"
printf 'installed %s to %s/toolgate\n' "$installed" "$prefix"
case ":${PATH:-}:" in
  *":$prefix:"*) ;;
  *) printf 'note: %s is not on PATH; add it, e.g. export PATH="%s:$PATH"\n' "$prefix" "$prefix" ;;
esac
