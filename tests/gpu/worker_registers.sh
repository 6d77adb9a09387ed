#!/usr/bin/env bash
# The sm_90 "Used N registers" line of each worker kernel (WorkerKernel, one or more instantiations)
# in a build's ptxas report, joined by ";":   bash tests/gpu/worker_registers.sh DIR/worker_kernel_worker.ptxas.txt
set -u
awk "/Compiling entry function '.*WorkerKernel.*' for 'sm_90'/ { k = 1 }
     k && /Used [0-9]+ registers/ { print; k = 0 }" "${1:?usage: worker_registers.sh PTXAS_REPORT}" | paste -sd';'
