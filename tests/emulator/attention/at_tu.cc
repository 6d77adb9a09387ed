// Instrumented TU of rt_at.cc (-fsanitize=thread, hooks in ../emu_core.h): the real op_attention.cuh, unmodified.
#include OPFILE
namespace emu {
void RunOp(const tileinfer::format::TaskRecord& t, const tileinfer::device::StepContext& c) {
#ifdef AT_WIDE  // setup.sh, for a version with OpAttention<kOnePass> or <kWide>: the wide kernel's instantiation
  tileinfer::device::OpAttention<true>(t, c);
#else
  tileinfer::device::OpAttention(t, c);
#endif
}
}  // namespace emu
