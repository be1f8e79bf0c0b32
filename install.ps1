# Installs the toolgate standalone executable (no Node.js needed) on Windows.
#
#   irm https://github.com/toolgate/toolgate/releases/latest/download/install.ps1 | iex
#   .\install.ps1 [-Version X.Y.Z] [-BaseUrl URL] [-Prefix DIR] [-Insecure]
#
# Downloads SHA256SUMS and the win-x64 archive from the base URL (-BaseUrl, else
# $env:TOOLGATE_INSTALL_BASE_URL, else the project's release page), checks the archive against
# SHA256SUMS, and only then installs toolgate.exe into DIR (default ~\.local\bin). Nothing
# unverified is run or installed; on any error nothing is installed.
[CmdletBinding()]
param(
  [string]$Version = '',
  [string]$BaseUrl = $env:TOOLGATE_INSTALL_BASE_URL,
  [string]$Prefix = (Join-Path $HOME '.local\bin'),
  # Accept a plain-http -BaseUrl on another host (the checksum then proves nothing).
  [switch]$Insecure
)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Releases = 'https://github.com/toolgate/toolgate/releases'

function Fail([string]$Message) {
  [Console]::Error.WriteLine("install.ps1: $Message")
  exit 1
}

if ($Version -and $Version -notmatch '^[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*$') {
  Fail "-Version must look like 1.2.3 (got `"$Version`")"
}
if (-not $BaseUrl) {
  $BaseUrl = if ($Version) { "$Releases/download/v$Version" } else { "$Releases/latest/download" }
}
if ($BaseUrl -notmatch '^https?://') { Fail "-BaseUrl must be an http(s) URL (got `"$BaseUrl`")" }
# Plain http lets anyone on the path swap the archive and SHA256SUMS together: only this
# machine's loopback, or with -Insecure.
if ($BaseUrl -match '^http://' -and -not $Insecure -and
    $BaseUrl -notmatch '^http://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?(/|$)') {
  Fail "-BaseUrl $BaseUrl is plain http: anyone on the network path could replace the download and its SHA256SUMS together. Use https, or pass -Insecure to accept that"
}
$BaseUrl = $BaseUrl.TrimEnd('/')

# Only an x64 build exists; Windows on Arm runs it under its x64 emulation.
$arch = $env:PROCESSOR_ARCHITECTURE
if ($arch -ne 'AMD64' -and $arch -ne 'ARM64') {
  Fail "no toolgate build for the $arch CPU; install with npm instead: npm install -g toolgate"
}

$tmp = Join-Path ([IO.Path]::GetTempPath()) ("toolgate-install-" + [Guid]::NewGuid().ToString('N'))
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
  $sums = Join-Path $tmp 'SHA256SUMS'
  try {
    Invoke-WebRequest -Uri "$BaseUrl/SHA256SUMS" -OutFile $sums -TimeoutSec 120 -UseBasicParsing
  } catch { Fail "could not download $BaseUrl/SHA256SUMS: $($_.Exception.Message)" }

  $versionPattern = if ($Version) { [regex]::Escape($Version) } else { '[0-9][0-9A-Za-z.+-]*' }
  $pattern = "^([0-9a-f]{64})  (toolgate-$versionPattern-win-x64\.zip)$"
  $found = @(Get-Content -LiteralPath $sums | Where-Object { $_ -match $pattern })
  if ($found.Count -eq 0) { Fail "$BaseUrl/SHA256SUMS lists no toolgate $Version archive for win-x64" }
  if ($found.Count -gt 1) { Fail "$BaseUrl/SHA256SUMS lists several versions for win-x64; pass -Version" }
  $null = $found[0] -match $pattern
  $expected = $Matches[1]
  $archive = $Matches[2]

  $zip = Join-Path $tmp $archive
  try {
    Invoke-WebRequest -Uri "$BaseUrl/$archive" -OutFile $zip -TimeoutSec 600 -UseBasicParsing
  } catch { Fail "could not download $BaseUrl/${archive}: $($_.Exception.Message)" }
  $actual = (Get-FileHash -LiteralPath $zip -Algorithm SHA256).Hash.ToLowerInvariant()
  if ($actual -ne $expected) {
    Fail "checksum mismatch for ${archive}: SHA256SUMS says $expected, the download is $actual. Nothing was installed."
  }

  $x = Join-Path $tmp 'x'
  Expand-Archive -LiteralPath $zip -DestinationPath $x
  $exe = Join-Path $x 'toolgate.exe'
  if (-not (Test-Path -LiteralPath $exe -PathType Leaf)) { Fail "$archive does not contain toolgate.exe" }

  New-Item -ItemType Directory -Path $Prefix -Force | Out-Null
  # Copy next to the target, then replace it: a failed copy leaves any previous install intact.
  $staged = Join-Path $Prefix ".toolgate.install.$PID.exe"
  Copy-Item -LiteralPath $exe -Destination $staged
  Move-Item -LiteralPath $staged -Destination (Join-Path $Prefix 'toolgate.exe') -Force

  Write-Output "installed $([IO.Path]::GetFileNameWithoutExtension($archive)) to $(Join-Path $Prefix 'toolgate.exe')"
  $onPath = ($env:PATH -split ';') | Where-Object { $_.TrimEnd('\') -ieq $Prefix.TrimEnd('\') }
  if (-not $onPath) {
    Write-Output "note: $Prefix is not on PATH; add it in Settings > System > About > Advanced system settings > Environment Variables"
  }
} finally {
  Remove-Item -LiteralPath $tmp -Recurse -Force -ErrorAction SilentlyContinue
}
