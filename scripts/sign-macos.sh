#!/bin/sh
# Signs a toolgate macOS executable after the SEA injection (which leaves it unsigned: the build
# removes Node's own signature, docs/distribution.md). Runs on macOS (needs codesign).
#
#   scripts/sign-macos.sh FILE...                 ad-hoc signature (`codesign --sign -`): runs on
#                                                 the machine that signs it; Gatekeeper still
#                                                 blocks it when downloaded through a browser
#   MACOS_SIGN_IDENTITY="Developer ID Application: Example (TEAMID)" scripts/sign-macos.sh FILE...
#                                                 Developer ID signature with the hardened runtime
#                                                 and the JIT entitlements V8 needs
#   ... plus MACOS_NOTARY_PROFILE=<keychain profile of `xcrun notarytool store-credentials`>
#                                                 submits each file for notarization and waits
#
# A signed file's checksum changes: sign before `SHA256SUMS` is written (the release workflow
# signs, then re-archives and re-sums, .github/workflows/release.yml).
set -eu

die() {
  printf 'sign-macos.sh: %s\n' "$*" >&2
  exit 1
}

[ $# -gt 0 ] || die "usage: sign-macos.sh FILE... (env MACOS_SIGN_IDENTITY, MACOS_NOTARY_PROFILE)"
[ "$(uname -s)" = Darwin ] || die "codesign exists only on macOS; run this on a Mac (or a macOS CI runner)"
command -v codesign >/dev/null 2>&1 || die "codesign not found (install the Xcode command line tools)"

identity="${MACOS_SIGN_IDENTITY:-}"
profile="${MACOS_NOTARY_PROFILE:-}"
[ -z "$profile" ] || [ -n "$identity" ] || die "notarization needs a Developer ID: set MACOS_SIGN_IDENTITY too"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# V8 generates machine code at run time: under the hardened runtime it needs these entitlements.
cat >"$tmp/entitlements.plist" <<'PLIST'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>com.apple.security.cs.allow-jit</key><true/>
  <key>com.apple.security.cs.allow-unsigned-executable-memory</key><true/>
  <key>com.apple.security.cs.disable-library-validation</key><true/>
</dict>
</plist>
PLIST

for file in "$@"; do
  [ -f "$file" ] || die "$file: no such file"
  # Any leftover signature is replaced, never stacked.
  codesign --remove-signature "$file" 2>/dev/null || true
  if [ -z "$identity" ]; then
    codesign --sign - --force "$file"
  else
    codesign --sign "$identity" --force --timestamp --options runtime \
      --entitlements "$tmp/entitlements.plist" "$file"
  fi
  codesign --verify --strict --verbose=2 "$file"
  if [ -n "$profile" ]; then
    # notarytool takes a zip; a bare executable cannot be stapled, Gatekeeper checks online.
    ditto -c -k --keepParent "$file" "$tmp/notarize.zip"
    xcrun notarytool submit "$tmp/notarize.zip" --keychain-profile "$profile" --wait
    rm -f "$tmp/notarize.zip"
  fi
  "$file" --version >/dev/null || die "$file does not start after signing"
  printf 'signed %s (%s)\n' "$file" "${identity:-ad-hoc}"
done
