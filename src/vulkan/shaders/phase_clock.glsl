// Timestamps of a kernel's phases for bench/vulkan_phase_bench.cc, compiled in only with
// PHASE_CLOCK (the including shader enables GL_ARB_shader_clock and GL_EXT_shader_realtime_clock
// and defines PHASE_CLOCK_BINDING): thread 0 of workgroup w stores (device clock, its
// multiprocessor's clock), each as two 32-bit halves, for phase i at phase_clock[w * kPhases + i]
// (w = the flat workgroup index, x fastest).
// Without PHASE_CLOCK, phase_mark() is empty.
const uint kPhases = 16;
#ifdef PHASE_CLOCK
layout(std430, binding = PHASE_CLOCK_BINDING) writeonly buffer PhaseClock { uvec4 phase_clock[]; };
void phase_mark(uint phase) {
  if (gl_LocalInvocationIndex == 0u && phase < kPhases)
    phase_clock[((gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x) *
                    kPhases +
                phase] =
        uvec4(clockRealtime2x32EXT(), clock2x32ARB());
}
#else
void phase_mark(uint phase) {}
#endif
