#version 450
// Rotary embedding in place on every head of a row, with cos/sin per (token, pair) computed by
// the host (exactly as the CPU does) in a table: table[table_offset + (t * n_pairs + i) * 2 + {0,1}].
// One workgroup per token.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { float table[]; };

layout(push_constant) uniform Push {
  uint stride;  // floats per row
  uint n_heads, head_stride, offset;
  uint n_pairs;
  uint adjacent;  // 1: pairs (2i, 2i+1) (NORM); 0: (i, i + n_pairs) (NEOX, IMROPE)
  uint table_offset;
} p;

void main() {
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint tab = p.table_offset + t * p.n_pairs * 2;
  for (uint k = gl_LocalInvocationID.x; k < p.n_heads * p.n_pairs; k += 64) {
    const uint head = k / p.n_pairs, i = k % p.n_pairs;
    const uint base = t * p.stride + p.offset + head * p.head_stride;
    const uint a = p.adjacent != 0u ? base + 2 * i : base + i;
    const uint c = p.adjacent != 0u ? base + 2 * i + 1 : base + i + p.n_pairs;
    const float cs = table[tab + 2 * i], sn = table[tab + 2 * i + 1];
    const float x0 = x[a], x1 = x[c];
    x[a] = x0 * cs - x1 * sn;
    x[c] = x0 * sn + x1 * cs;
  }
}
