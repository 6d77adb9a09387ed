#!/usr/bin/env bash
# Call SR: the showcase of kRows 12 (main after it lands), ON call R12B's warm machine
# (.gpu/bin = exp/depth-r12, whose device code is main's once it lands). ~4.5 minutes.
set -u
source tests/gpu/call_lib.sh
call_begin
call_showcase 560
call_end showcase_r12 docs/experiments/next/call_sr.sh
