#!/usr/bin/env bash
# Installs the client generators that tests/api/test_generated_clients.py runs, into var/clients/:
#   venv/  openapi-python-client, in a venv of its own (its generated clients need httpx, attrs
#          and python-dateutil, which it depends on itself)
#   node/  @hey-api/openapi-ts, TypeScript (tsc), Node.js's types (the usage file reads its
#          arguments) and tsx (which runs it), by `npm install --prefix`
# A tool already installed at its pinned version is left alone, so running this again does nothing.
# Needs only Python 3.11 with pip and venv, and npm with Node.js 20, each reaching its registry.
set -euo pipefail
cd "$(dirname "$0")/.."

OPENAPI_PYTHON_CLIENT=0.29.1
# 0.96 and later declare Node.js 22 as their minimum; 0.95.0 is the newest that supports 20.
HEY_API_OPENAPI_TS=0.95.0
TYPESCRIPT=5.9.3
TYPES_NODE=20.19.43
TSX=4.23.15

CLIENTS=var/clients
VENV=$CLIENTS/venv
NODE=$CLIENTS/node

installed_python() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" - "$OPENAPI_PYTHON_CLIENT" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version

import attrs, dateutil, httpx  # noqa: E401, F401  (what a generated client imports)

sys.exit(version("openapi-python-client") != sys.argv[1])
PY
}

installed_npm() {  # installed_npm NAME VERSION
  [ "$(node -p "require('./$NODE/node_modules/$1/package.json').version" 2>/dev/null)" = "$2" ]
}

if installed_python; then
  echo "openapi-python-client $OPENAPI_PYTHON_CLIENT is installed in $VENV"
else
  echo "--- installing openapi-python-client $OPENAPI_PYTHON_CLIENT into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "openapi-python-client==$OPENAPI_PYTHON_CLIENT" httpx attrs python-dateutil
  installed_python
fi

NPM_PACKAGES=(
  "@hey-api/openapi-ts@$HEY_API_OPENAPI_TS"
  "typescript@$TYPESCRIPT"
  "@types/node@$TYPES_NODE"
  "tsx@$TSX"
)

installed_all_npm() {
  local package
  for package in "${NPM_PACKAGES[@]}"; do
    installed_npm "${package%@*}" "${package##*@}" || return 1
  done
}

if installed_all_npm; then
  echo "${NPM_PACKAGES[*]} are installed in $NODE"
else
  echo "--- installing ${NPM_PACKAGES[*]} into $NODE"
  mkdir -p "$NODE"
  npm install --silent --no-audit --no-fund --save-exact --prefix "$NODE" "${NPM_PACKAGES[@]}"
  installed_all_npm
fi
