#!/bin/sh
# Build the addon with AddressSanitizer in a scratch dir and run the engine and pool tests against it,
# once with each loop: AVX-512 (AVX2 where the CPU lacks it), AVX2 and the SSE2 baseline.
# Usage: sh native/asan.sh
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/native/binding.gyp" "$root/native/src" "$work/"
sed -i 's/"-Wno-psabi"\]/"-Wno-psabi", "-fsanitize=address", "-fno-omit-frame-pointer", "-g"]/; s/"ldflags": \["-pthread"\]/"ldflags": ["-pthread", "-fsanitize=address"]/' "$work/binding.gyp"
nodedir=${npm_config_nodedir:-$(npm config get nodedir 2>/dev/null || true)}
case "$nodedir" in ""|undefined|null) nodedir_flag= ;; *) nodedir_flag="--nodedir=$nodedir" ;; esac
(cd "$work" && NODE_PATH="$root/node_modules" "$root/node_modules/.bin/node-gyp" rebuild $nodedir_flag >/dev/null)
for isa in avx512 avx2 sse2; do
  echo "asan: engine and pool tests, $isa loop"
  (cd "$root" && NPU_BLOCK_GATE_ISA=$isa LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 \
    NPU_BLOCK_GATE_NATIVE="$work/build/Release/npu_block_gate.node" node node_modules/uvu/bin.js -r tsx test "engines|native-pool")
done
