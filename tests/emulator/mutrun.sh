#!/bin/bash
# bin/AO_NEW and every mutant of mutate.py on a few cases each (rt_ao args:
# HD NH C minc pos seed poison H r0 r1 special; format 2: special 0, normal data); a mutant must be reported (race, bounds, alignment,
# ownership) or fail; bin/AO_NEW must be clean. nc = non-empty chunks (min_chunk 128 or 16).
source "$(dirname "${BASH_SOURCE[0]}")/emu_lib.sh"; B=${B:?}; cd $B; mkdir -p out
AO=("64 32 5 128 40 1 1 80 0 75 0"  "64 32 1 128 0 7 0 80 0 80 0"  "128 8 16 128 127 8 1 80 2 70 0"  "2 3 7 128 20 4 1 80 5 45 0"  "12 5 4 16 9 9 0 80 0 80 0"
    "64 32 5 16 40 1 1 80 0 75 0"   "64 9 16 16 255 2 1 80 3 60 0"  "16 4 3 1 99 3 0 80 0 80 0"     "2 3 7 16 20 4 1 80 5 45 0"   "128 8 16 128 999 5 1 80 1 79 0")
#    nc=1                          nc=1 (C=1, ctx 1)            nc=1 (ctx 128)                 nc=1 (Q=6: scalar GEMV)      nc=1 (Q=60, min_chunk 16)
#    nc=3                          nc=16                         nc=3 (min_chunk 1)             nc=2                         nc=8
for b in bin/AO_NEW $(find mut -maxdepth 1 -type f -perm -u+x | sort); do emu_mutrun $b "${AO[@]}"; done
