#version 450
// Measurement only (bench/vulkan_code_bench.cc): what straight-line code run once costs a
// dispatch, and whether it is cheaper when the same pipeline (or the same code in another
// pipeline) ran just before. Each invocation runs kRounds rounds of 8 dependent-pair FMAs whose
// constants differ by round, so the compiler keeps every round as code (about 150 bytes a round).
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint kRounds = 0;
layout(constant_id = 1) const uint kTag = 0;  // distinct pipelines of the same code

layout(std430, binding = 0) buffer D { vec4 d[]; };

layout(push_constant) uniform Push {
  uint n;
  float c;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  vec4 a = d[i], b = d[i + p.n];
  [[unroll]] for (uint r = 0; r < kRounds; ++r) {
    a = fma(a, b, vec4(p.c * float(r + 1)));
    b = fma(b, a, vec4(p.c + float(r)));
  }
  d[i] = a + b + float(kTag);
}
