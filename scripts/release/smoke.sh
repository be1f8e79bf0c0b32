#!/bin/sh
# Smoke test of one built executable on a machine that runs it (the release workflow's native
# runners and the qemu job): --version, --help, and `serve` answering one registry request.
#   scripts/release/smoke.sh PATH/TO/toolgate [RUNNER...]   (RUNNER: e.g. qemu-aarch64-static)
set -eu
[ $# -ge 1 ] || { echo "usage: smoke.sh EXECUTABLE [RUNNER...]" >&2; exit 2; }
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
pid=""
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/examples" "$work/home"
cp "$root/examples/anonymous.yaml" "$root/examples/registry.json" "$work/examples/"
export HOME="$work/home" XDG_DATA_HOME="$work/home/data" XDG_CACHE_HOME="$work/home/cache"

"$@" "$bin" --version
"$@" "$bin" version --json
"$@" "$bin" --help | grep -q '^COMMANDS' || { echo "smoke: --help lists no commands" >&2; exit 1; }

cd "$work"
"$@" "$bin" serve --config examples/anonymous.yaml --address 127.0.0.1:0 --internal-address 127.0.0.1:0 --json \
  >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
i=0
until grep -q '"internalUrl"' "$work/serve.out" 2>/dev/null; do
  i=$((i + 1))
  [ "$i" -le 240 ] || { echo "smoke: serve printed no URL in 120 s" >&2; cat "$work/serve.err" >&2; exit 1; }
  sleep 0.5
done
url="$(head -n 1 "$work/serve.out" | sed 's/.*"url":"\([^"]*\)".*/\1/')"
internal="$(head -n 1 "$work/serve.out" | sed 's/.*"internalUrl":"\([^"]*\)".*/\1/')"
i=0
until curl -fsS --max-time 5 "$internal/readiness" >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -le 240 ] || { echo "smoke: serve not ready in 120 s" >&2; cat "$work/serve.err" >&2; exit 1; }
  sleep 0.5
done
curl -fsS --max-time 10 "$url/registry/default/v0.1/servers?limit=1" | grep -q '"servers"' ||
  { echo "smoke: the registry did not answer" >&2; exit 1; }
echo "smoke: $bin answered $url/registry/default/v0.1/servers"
