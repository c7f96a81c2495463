#!/usr/bin/env bash
# The test command (README, "The two commands"): sets up what a fresh machine lacks, then runs
# every test of the workspace with `cargo test --workspace` (arguments are passed to it).
#
# Set-up, each step skipped when already done:
# - the `wasm32-unknown-unknown` target (rustup), which the guest modules are built for;
# - schemathesis (PyPI, the version pinned in node/tests/requirements.txt) for
#   node/tests/server/openapi.rs;
# - Node.js 20+ with npm, and Chromium at /usr/bin/chromium (apt), for node/tests/web/web_js.rs
#   and node/tests/web/codegen_ts.rs;
# - the JavaScript SDK's npm packages (`npm ci` in node/web/sdk, from its lock file).
# `.ci/run` runs exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "tests/run.sh: $*" >&2; exit 1; }

command -v rustup >/dev/null || fail "rustup is needed (https://rustup.rs); it installs the toolchain rust-toolchain.toml pins"
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi

node_major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
chromium=${CHROMIUM:-/usr/bin/chromium}
apt_missing=()
major=$(node_major || true)
if [ -z "$major" ] || [ "$major" -lt 20 ]; then apt_missing+=(nodejs); fi
command -v npm >/dev/null || apt_missing+=(npm)
[ -x "$chromium" ] || apt_missing+=(chromium)
# python3 with venv: node/tests/server/openapi.rs installs schemathesis into one when pip cannot.
python3 -c 'import venv, ensurepip' 2>/dev/null || apt_missing+=(python3 python3-venv python3-pip)
if [ ${#apt_missing[@]} -gt 0 ]; then
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null ||
      fail "${apt_missing[*]} must be installed (apt-get install ${apt_missing[*]}) and this user is not root and has no sudo"
    sudo_cmd="sudo"
  fi
  echo "tests/run.sh: installing ${apt_missing[*]} with apt-get" >&2
  $sudo_cmd apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}"
fi
major=$(node_major || true)
if [ -z "$major" ] || [ "$major" -lt 20 ]; then
  fail "Node.js 20 or newer is needed (found ${major:-none}); this system's packages are older: install it from https://nodejs.org or NodeSource, then run again"
fi

# (Where pip may not install system-wide, openapi.rs installs it into a venv under target/.)
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  -r node/tests/requirements.txt ||
  echo "tests/run.sh: pip could not install schemathesis; node/tests/server/openapi.rs will use a venv" >&2

# `npm ci` only when the installed packages are not those of the lock file.
sdk=node/web/sdk
if ! cmp -s "$sdk/package-lock.json" "$sdk/node_modules/.package-lock.json.ci" 2>/dev/null; then
  (cd "$sdk" && npm ci --no-audit --no-fund)
  cp "$sdk/package-lock.json" "$sdk/node_modules/.package-lock.json.ci"
fi

exec cargo test --workspace "$@"
