#version 450
// Prefill product y[t][r] = sum_k W[r][k] x[t][k] for many tokens, W dequantized tile by tile
// into shared memory (layout: src/vulkan/weights.h), float32 math. A workgroup of 256 threads
// computes a tile of 64 rows x 64 tokens; each thread 4 rows x 4 tokens; K in steps of 32.
// Split over K (split_groups > 0): workgroup z sums groups [z, z + 1) * split_groups into its own
// y block, y_offset + z * n_tokens * y_stride, for splitk_reduce.comp to add up.
#include "quant.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer X1 { float x1[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer R { float residual[]; };

layout(push_constant) uniform Push {
  uint rows, cols, n_tokens, x_stride, y_stride, y_offset, flags, split_groups;
  uvec4 planes;
} p;

const uint kBM = 64, kBN = 64, kStride = 9;  // vec4s per tile row: 8 + 1 against bank conflicts
shared vec4 ws[kBM * kStride];  // [row][k / 4]
shared vec4 xs[kBN * kStride];  // [token][k / 4]

void main() {
  init_codebook();
  const uint tid = gl_LocalInvocationID.x;
  const uint tile_r = gl_WorkGroupID.x * kBM, tile_t = gl_WorkGroupID.y * kBN;
  const uint tr = tid % 16, tc = tid / 16;
  const uint groups = (p.cols + 31) / 32, blocks = groups / BLOCK_GROUPS;
  const uint g0 = gl_WorkGroupID.z * p.split_groups;
  const uint g1 = p.split_groups == 0u ? groups : min(groups, g0 + p.split_groups);
  const uint y_offset = p.y_offset + gl_WorkGroupID.z * p.n_tokens * p.y_stride;
  vec4 acc[4];  // acc[token][row]
  [[unroll]] for (uint j = 0; j < 4; ++j) acc[j] = vec4(0.0);

  for (uint g = g0; g < g1; ++g) {
    if (tid < kBM) {
      const uint row = min(tile_r + tid, p.rows - 1);
      const Group gr = load_group(0, p.planes, row * groups + g, row * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      [[unroll]] for (uint j = 0; j < 8; ++j) ws[tid * kStride + j] = group_values(gr, j);
    }
    [[unroll]] for (uint e = tid; e < kBN * 8; e += 256) {
      const uint t = e / 8, j = e % 8, tok = tile_t + t, k = 32 * g + 4 * j;
      vec4 v = vec4(0.0);
      if (tok < p.n_tokens) {
        if (k + 4 <= p.cols) {
          v = x4[(tok * p.x_stride + k) / 4];
        } else {
          [[unroll]] for (uint i = 0; i < 4; ++i) v[i] = k + i < p.cols ? x1[tok * p.x_stride + k + i] : 0.0;
        }
      }
      xs[t * kStride + j] = v;
    }
    barrier();
    for (uint kq = 0; kq < 8; ++kq) {
      vec4 a[4], b[4];
      [[unroll]] for (uint i = 0; i < 4; ++i) a[i] = ws[(4 * tr + i) * kStride + kq];
      [[unroll]] for (uint j = 0; j < 4; ++j) b[j] = xs[(4 * tc + j) * kStride + kq];
      [[unroll]] for (uint j = 0; j < 4; ++j)
        [[unroll]] for (uint i = 0; i < 4; ++i) acc[j][i] += dot(a[i], b[j]);
    }
    barrier();
  }

  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint tok = tile_t + 4 * tc + j;
    if (tok >= p.n_tokens) break;
    [[unroll]] for (uint i = 0; i < 4; ++i) {
      const uint row = tile_r + 4 * tr + i;
      if (row >= p.rows) break;
      const uint dst = tok * p.y_stride + y_offset + row;
      float v = acc[j][i];
      if ((p.flags & 1u) != 0u) v += residual[dst];
      y[dst] = v;
    }
  }
}
