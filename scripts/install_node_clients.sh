#!/usr/bin/env bash
# The Node MCP clients tests/mcp/test_node_clients.py runs: the official TypeScript SDK and
# mcp-remote (the stdio bridge Claude Desktop users run), at exact versions, under
# var/clients/mcp-node (git-ignored). Idempotent: does nothing when those versions are there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${GATEHOUSE_NODE_CLIENTS:-$ROOT/var/clients/mcp-node}"
PACKAGES=(
  "@modelcontextprotocol/sdk@1.32.2"
  "mcp-remote@0.15.1"
)

installed() {  # installed NAME@VERSION: is exactly that version under $PREFIX?
  local spec="$1" name version manifest
  name="${spec%@*}"
  version="${spec##*@}"
  manifest="$PREFIX/node_modules/$name/package.json"
  [[ -f "$manifest" ]] || return 1
  [[ "$(node -p "require(process.argv[1]).version" "$manifest")" == "$version" ]]
}

command -v node >/dev/null || { echo "node is missing: install Node.js 20 or later" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is missing: install Node.js 20 or later" >&2; exit 1; }

missing=()
for spec in "${PACKAGES[@]}"; do
  installed "$spec" || missing+=("$spec")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "Node MCP clients already installed in $PREFIX"
  exit 0
fi

mkdir -p "$PREFIX"
[[ -f "$PREFIX/package.json" ]] || echo '{"private": true}' >"$PREFIX/package.json"
npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund --ignore-scripts "${PACKAGES[@]}"
for spec in "${PACKAGES[@]}"; do
  installed "$spec" || { echo "$spec did not install in $PREFIX" >&2; exit 1; }
done
echo "Installed ${PACKAGES[*]} in $PREFIX"
