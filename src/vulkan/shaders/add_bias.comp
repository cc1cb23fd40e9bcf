#version 450
// y[t][r] += bias[r] for r < cols, t < n_tokens.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer B { float bias[]; };
layout(push_constant) uniform Push { uint cols, stride, n_tokens; } p;

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256 + gl_LocalInvocationID.x;
  if (i >= p.cols * p.n_tokens) return;
  const uint t = i / p.cols, r = i % p.cols;
  y[t * p.stride + r] += bias[r];
}
