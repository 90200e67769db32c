#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build, the tests and the runtime need and the
# machine lacks. Idempotent: a machine that has everything is left alone (no apt-get call).
# Extra packages may be named as arguments (scripts/fuzz.sh asks for afl++).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config lld  # lld: the faster linker (CMakeLists.txt)
  libeigen3-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libcli11-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libhiredis-dev libcpp-httplib-dev libssl-dev openssl liblemon-dev coinor-libcbc-dev
  redis-server prometheus
  python3  # tools/characterise's tests
  chromium  # renders the status page in tests/k8s/status_page_test.cc (and scripts/screenshot.sh)
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
