#!/usr/bin/env bash
# Call UX (docs/PERFORMANCE.md "Call UX"), ON the GPU machine from the repo root: main after the
# thirty-first session's host changes (decode's output and chat checks, the tokenizer's Unicode
# widening, the Python binding, the planner's checks; the worker's sources unchanged): the tiny
# models, golden and sanitizers; the SmolLM2 shape's generation; decode on the GPU with a full
# disk, a closed pipe and CRLF chat turns.
# Here first: bash tests/gpu/prepare.sh; cp this to .gpu/; carry .gpu/bin.tar.xz and it.
set -u
export CALL_MODELS=smollm2_shape
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
call_checks
call_generation smollm2_shape
P="$W/smollm2_shape.tpkg"
D=".gpu/bin/decode --package=$P --device=gpu"
$D --prompt_ids=1,2,3 --max_new_tokens=40 --ignore_eos > "$OUT/decode_plain.txt" 2>&1
echo "decode plain rc=$? $(grep -c '^output: ' "$OUT/decode_plain.txt") output line; $(tail -1 "$OUT/decode_plain.txt")"
$D --prompt_ids=1,2,3 --max_new_tokens=40 --ignore_eos > /dev/full 2> "$OUT/decode_full.txt"
echo "decode > /dev/full rc=$? (want 1): $(tail -1 "$OUT/decode_full.txt")"
timeout 60 $D --prompt_ids=1,2,3 --max_new_tokens=60 --ignore_eos 2> "$OUT/decode_pipe.txt" | head -c 20 > /dev/null
echo "decode | head -c 20: rc=${PIPESTATUS[0]} (a SIGPIPE death is 141, a write error 1; 124 would be a hang)"
printf 'hi\r\n\r\nnot read\n' | timeout 60 $D --chat --max_new_tokens=8 --ignore_eos > "$OUT/decode_chat.txt" 2>&1
echo "decode --chat CRLF rc=$? $(grep -c '^prompt: ' "$OUT/decode_chat.txt") turn(s) (want 1)"
call_end call_ux .gpu/call_ux.sh
