#!/usr/bin/env bash
# Installs the system packages that the tests and examples run for real, when any is missing.
# Run by `npm test` and `npm run demo` (their `pre` scripts) and so by CI.
#
# - python3 with numpy, matplotlib, sympy and IPython: the interpreter tools run real Python, and the
#   Python-interop and JSON-fidelity tests run it too;
# - bubblewrap: the interpreters' sandbox;
# - redis-server: the queue tests start their own on a free port;
# - python3-requests, python3-fastapi, python3-uvicorn: the HTTP interop tests run Python Lagent's client
#   protocol against our server, and ours against a Python server;
# - python3-pyflakes: `npm run lint` lints the interpreters' Python driver (src/tools/python/driver.py);
# - tmux: the `lagent chat` test drives the REPL in a real terminal;
# - postgresql: the PostgresStore tests run their own server (initdb and postgres as the postgres user) on
#   a free port;
# - chromium: the `lagent ui` page is tested in it, headless, through playwright-core.
#
# On Debian and Ubuntu the missing ones are installed with apt-get (through sudo when not root). Elsewhere
# the script lists what to install and fails. LAGENT_SKIP_SYSTEM_PACKAGES=1 skips it (for a machine
# provisioned another way).
set -euo pipefail

packages=(python3 python3-numpy python3-matplotlib python3-sympy ipython3 bubblewrap redis-server
  python3-requests python3-fastapi python3-uvicorn python3-pyflakes tmux postgresql chromium)

if [ "${LAGENT_SKIP_SYSTEM_PACKAGES:-}" = "1" ]; then exit 0; fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "lagent-ts: this is not a Debian/Ubuntu machine, so the system packages the tests need are not" >&2
  echo "installed automatically. Install the equivalents of: ${packages[*]}" >&2
  echo "then run again with LAGENT_SKIP_SYSTEM_PACKAGES=1." >&2
  exit 1
fi

need=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || need+=("$package")
done
[ "${#need[@]}" -eq 0 ] && exit 0

echo "lagent-ts: installing system packages: ${need[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "lagent-ts: not root and no sudo: install these packages, then run again: ${need[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
if ! "${sudo[@]}" apt-get update -qq ||
  ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; then
  echo "lagent-ts: apt-get could not install: ${need[*]}" >&2
  exit 1
fi
