#!/bin/bash
# bench/clients/inductor.sh - a cold TorchInductor compile of a small model
# (inductor_model.py, forward and backward) with empty Inductor and Triton
# caches, plain ptxas against cjc's ptxas masquerade (TRITON_PTXAS_PATH,
# docs/recipes.md), cjc with an empty store and then a filled one.  Needs a
# GPU, PyTorch and Triton; cjc on PATH (or CJC=).  Prints one line a run.
#
# Benchmarks are not tests: nothing here asserts a time.
set -uo pipefail
cd "$(dirname "$0")" || exit 1
CJC=${CJC:-$(command -v cjc)} || { echo "no cjc on PATH: set CJC" >&2; exit 1; }
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" || exit 1
BUNDLED=$(python3 -c "import triton, os; print(os.path.dirname(triton.__file__))")/backends/nvidia/bin/ptxas
REAL=${REAL_PTXAS:-$BUNDLED}
[ -x "$REAL" ] || REAL=/usr/local/cuda/bin/ptxas
echo "ptxas $REAL: $("$REAL" --version | tail -1)"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/masq" && ln -s "$CJC" "$W/masq/ptxas"
export TORCHINDUCTOR_CACHE_DIR=$W/inductor TRITON_CACHE_DIR=$W/triton CJC_DIR=$W/store CJC_PTXAS=$REAL
# cold NAME PTXAS: one compile with empty Inductor and Triton caches.
cold() {
	rm -rf "$W/inductor" "$W/triton"
	local t0=$EPOCHREALTIME said
	said=$(TRITON_PTXAS_PATH=$2 python3 inductor_model.py 2>&1 | tail -1)
	echo "$1: $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }") s wall ($said)"
}
counters() { "$CJC" stats | grep -E '^(hits|misses|errors)' | tr -s ' ' | tr '\n' ' '; echo; }
cold "plain (python's caches warm-up)" "$REAL"
cold plain "$REAL"
cold "cjc, empty store" "$W/masq/ptxas"
counters
cold "cjc, filled store" "$W/masq/ptxas"
counters
cold plain "$REAL"
cold "cjc, filled store" "$W/masq/ptxas"
