// Instrumented TU of rt_at.cc (-fsanitize=thread, hooks in ../emu_core.h): the real op_attention.cuh, unmodified.
#include OPFILE
namespace emu {
void RunOp(const tileinfer::format::TaskRecord& t, const tileinfer::device::StepContext& c) {
  tileinfer::device::OpAttention(t, c);
}
}  // namespace emu
