#!/usr/bin/env bash
# What `napi build` runs as cargo in `make test-node` (napi runs $CARGO when it is set). napi
# always passes `--target <triple>`, this machine's own triple included, and to Cargo an explicit
# --target means a build directory of its own, target/<triple>/: the whole graph (SQLite's C,
# the core, tokio, rustls...) compiled a second time beside the same units that the workspace's
# tests and the Python wheel have already built in target/debug. Here a --target naming this
# machine is dropped, and the shared libraries in the profile's folder are linked where napi then
# copies the addon from, target/<triple>/<profile>/. Anything else goes to cargo as it is.
set -euo pipefail
host=$(rustc -vV | sed -n 's/^host: //p')
[ "${1-}" = build ] || exec cargo "$@"

args=() built=debug wanted=debug target_dir="" dropped=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) if [ "${2-}" = "$host" ]; then dropped=yes; shift 2; continue; fi ;;
    --target="$host") dropped=yes; shift; continue ;;
    --release|-r) built=release wanted=release ;;
    # napi looks in the folder named as the profile; Cargo writes the `dev` profile to debug/.
    --profile) wanted=${2-}; built=$([ "${2-}" = dev ] && echo debug || echo "${2-}") ;;
    --target-dir) target_dir=${2-} ;;
  esac
  args+=("$1"); shift
done
[ -n "$dropped" ] || exec cargo "${args[@]}"

if [ -z "$target_dir" ]; then
  target_dir=${CARGO_TARGET_DIR:-${CARGO_BUILD_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}}
fi
cargo "${args[@]}"
mkdir -p "$target_dir/$host/$wanted"
find "$target_dir/$built" -maxdepth 1 -type f \( -name '*.so' -o -name '*.dylib' \) -exec ln -f {} "$target_dir/$host/$wanted/" \;
