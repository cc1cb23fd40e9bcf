#version 450
// out[t][0..cols) = the dequantized row ids[ids_offset + t] of a weight matrix (token
// embeddings) times scale, one workgroup per token; a dispatch covers one chunk and skips ids
// outside it.
#include "quant.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 2) writeonly buffer Out4 { vec4 out4[]; };
layout(std430, binding = 2) writeonly buffer Out1 { float out1[]; };

layout(push_constant) uniform Push {
  uint rows, cols, row_begin, out_stride;  // out_stride: floats per token (multiple of 4)
  uvec4 planes;
  uint ids_offset;  // in uint32 words
  float scale;
} p;

void main() {
  init_codebook();
  const uint t = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint id = ids[p.ids_offset + t];
  if (id < p.row_begin || id >= p.row_begin + p.rows) return;
  const uint row = id - p.row_begin;
  const uint groups = (p.cols + 31) / 32, blocks = groups / BLOCK_GROUPS;
  for (uint g = gl_LocalInvocationID.x; g < groups; g += 64) {
    const Group gr = load_group(0, p.planes, row * groups + g, row * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
    const uint base = t * p.out_stride + 32 * g;
    [[unroll]] for (uint j = 0; j < 8; ++j) {
      const vec4 v = group_values(gr, j) * p.scale;
      if (32 * g + 4 * j + 4 <= p.cols) {
        out4[base / 4 + j] = v;
      } else {
        [[unroll]] for (uint i = 0; i < 4; ++i)
          if (32 * g + 4 * j + i < p.cols) out1[base + 4 * j + i] = v[i];
      }
    }
  }
}
