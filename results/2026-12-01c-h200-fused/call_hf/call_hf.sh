#!/usr/bin/env bash
# Second call on call FR3's warm machine: v48 (main f3d2f79, .gpu/b) on SmolLM2-135M-Instruct's
# real weights against transformers (device_checks.sh smollm2_real; the GGUF's first half
# was stashed by call_fr3_p3.sh). Run as the third call (the second, without `probe`, was
# refused by the packages' worker fingerprint: the target had been probed with P3's build).
set -u
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/ab.tar.xz
[ -f /tmp/gguf_part_a ] || { echo "no stashed GGUF half: not the same machine"; exit 3; }
export OUT
BIN_DIR=.gpu/b bash tests/gpu/device_checks.sh info probe smollm2_real 2>&1 | tee "$OUT/call_hf.log" | tail -60
