#!/usr/bin/env bash
# GPU workflow for self-hosted runners with an NVIDIA GPU: prints a skip line without a driver.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo xtask setup
cargo xtask test --gpu
