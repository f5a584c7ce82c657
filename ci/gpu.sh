#!/usr/bin/env bash
# GPU workflow for self-hosted runners with an NVIDIA or an AMD GPU: builds the corpus for the
# runner's GPU and runs it; prints a skip line without a driver.
#   NVIDIA: RUSTOMP_GPU_ARCH defaults to sm_90.
#   AMD (/dev/kfd present): RUSTOMP_GPU_ARCH is read off `rocminfo` when it is installed,
#   else set it yourself (e.g. gfx90a).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${RUSTOMP_GPU_ARCH:-}" ] && [ -e /dev/kfd ] && command -v rocminfo >/dev/null 2>&1; then
    RUSTOMP_GPU_ARCH="$(rocminfo | grep -o -m1 'gfx[0-9a-f]*' || true)"
    export RUSTOMP_GPU_ARCH
fi
cargo xtask setup
cargo xtask test --gpu
