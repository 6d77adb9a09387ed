// Instrumented TU (-fsanitize=thread, hooks in ../emu_core.h): the real op files, unmodified.
#include "cuda/op_ffn.cuh"
#include "cuda/op_rmsnorm_gemv.cuh"
#include "cuda/op_lm_head.cuh"
namespace emu {
void RunOp(const tileinfer::format::TaskRecord& t, const tileinfer::device::StepContext& c) {
  switch (t.opcode) {
    case 2: tileinfer::device::OpRmsNormGemv(t, c, c.p.hidden); break;
    case 5: tileinfer::device::OpFfn(t, c); break;
    case 7: tileinfer::device::OpLmHead(t, c); break;
  }
}
}  // namespace emu
