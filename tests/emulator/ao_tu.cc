// Instrumented TU of rt_ao.cc and direct/rt_da.cc (-fsanitize=thread, hooks in emu_core.h): the real op_attn_out.cuh, unmodified.
#include OPFILE
namespace emu {
void RunOp(const tileinfer::format::TaskRecord& t, const tileinfer::device::StepContext& c) {
  tileinfer::device::OpAttnOut(t, c);
}
}  // namespace emu
