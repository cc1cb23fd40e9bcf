#version 450
// c[i] = op(a[i], b[i]) for i < n: kOp 0 add, 1 SwiGLU silu(a) * b, 2 multiply.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint kOp = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint n; } p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * 256;
  for (uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256 + gl_LocalInvocationID.x; i < p.n;
       i += stride) {
    const float u = a[i], v = b[i];
    c[i] = kOp == 0 ? u + v : kOp == 1 ? u / (1.0 + exp(-u)) * v : u * v;
  }
}
