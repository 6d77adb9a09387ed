// Instrumented TU (-fsanitize=thread, hooks in ../emu_core.h): the real op files, unmodified.
#include "cuda/op_ffn.cuh"
#include "cuda/op_rmsnorm_gemv.cuh"
#include "cuda/op_lm_head.cuh"
// EMU_WIDE (setup.sh, for a version with WorkerKernel<kWide>): the ops' wide instantiation,
// the one that holds every form of RmsNormToShared (the narrow one lacks the form above 2,048).
#ifdef EMU_WIDE
#define EMU_NORM <true>
#else
#define EMU_NORM
#endif
namespace emu {
void RunOp(const tileinfer::format::TaskRecord& t, const tileinfer::device::StepContext& c) {
  switch (t.opcode) {
    case 2: tileinfer::device::OpRmsNormGemv EMU_NORM(t, c, c.p.hidden); break;
    case 5: tileinfer::device::OpFfn EMU_NORM(t, c); break;
    case 7: tileinfer::device::OpLmHead EMU_NORM(t, c); break;
  }
}
}  // namespace emu
