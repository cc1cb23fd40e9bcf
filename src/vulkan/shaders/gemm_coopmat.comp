#version 450
// As gemm.comp, on NV cooperative matrices (16x16x16, f16 inputs, f32 accumulators): a
// workgroup of 8 subgroups of 32 computes 128 rows x 128 tokens; subgroup s takes rows
// 64 (s % 2) .. + 64 and tokens 32 (s / 2) .. + 32 (4 x 2 matrices). W and x tiles are
// converted to f16 in shared memory, K in steps of 32. Selected at run time where
// DeviceCaps::coopmat_nv_f16 and the subgroup size is 32.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#include "quant.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer X1 { float x1[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer R { float residual[]; };

layout(push_constant) uniform Push {
  uint rows, cols, n_tokens, x_stride, y_stride, y_offset, flags, pad;
  uvec4 planes;
} p;

const uint kBM = 128, kBN = 128, kStride = 40;  // shared row stride in halves (80 bytes)
shared float16_t as_[kBM * kStride];  // W tile [row][k]
shared float16_t bs_[kBN * kStride];  // x tile [token][k]
shared float cs_[8 * 256];            // one 16x16 output matrix per subgroup

void main() {
  init_codebook();
  const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint tile_r = gl_WorkGroupID.x * kBM, tile_t = gl_WorkGroupID.y * kBN;
  const uint wr = 64 * (sg % 2), wt = 32 * (sg / 2);
  const uint groups = (p.cols + 31) / 32, blocks = groups / BLOCK_GROUPS;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[4][2];
  [[unroll]] for (uint i = 0; i < 4; ++i)
    [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  for (uint g = 0; g < groups; ++g) {
    if (tid < kBM) {
      const uint row = min(tile_r + tid, p.rows - 1);
      const Group gr = load_group(0, p.planes, row * groups + g, row * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      [[unroll]] for (uint j = 0; j < 8; ++j) {
        const f16vec4 v = f16vec4(group_values(gr, j));
        [[unroll]] for (uint i = 0; i < 4; ++i) as_[tid * kStride + 4 * j + i] = v[i];
      }
    } else {
      for (uint e = tid - kBM; e < kBN * 8; e += 256 - kBM) {
        const uint t = e / 8, j = e % 8, tok = tile_t + t, k = 32 * g + 4 * j;
        vec4 v = vec4(0.0);
        if (tok < p.n_tokens) {
          if (k + 4 <= p.cols) {
            v = x4[(tok * p.x_stride + k) / 4];
          } else {
            [[unroll]] for (uint i = 0; i < 4; ++i) v[i] = k + i < p.cols ? x1[tok * p.x_stride + k + i] : 0.0;
          }
        }
        const f16vec4 h = f16vec4(v);
        [[unroll]] for (uint i = 0; i < 4; ++i) bs_[t * kStride + 4 * j + i] = h[i];
      }
    }
    barrier();
    [[unroll]] for (uint kk = 0; kk < 32; kk += 16) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[4];
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[2];
      [[unroll]] for (uint i = 0; i < 4; ++i) coopMatLoadNV(a[i], as_, (wr + 16 * i) * kStride + kk, kStride, false);
      [[unroll]] for (uint j = 0; j < 2; ++j) coopMatLoadNV(b[j], bs_, (wt + 16 * j) * kStride + kk, kStride, true);
      [[unroll]] for (uint i = 0; i < 4; ++i)
        [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
    }
    barrier();
  }

  // Through shared memory (column-major: element (row, token) at token * 16 + row) so that
  // partial tiles and the residual are handled per element.
  [[unroll]] for (uint i = 0; i < 4; ++i)
    [[unroll]] for (uint j = 0; j < 2; ++j) {
      coopMatStoreNV(acc[i][j], cs_, sg * 256, 16, true);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < 256; e += gl_SubgroupSize) {
        const uint row = tile_r + wr + 16 * i + e % 16, tok = tile_t + wt + 16 * j + e / 16;
        if (row < p.rows && tok < p.n_tokens) {
          const uint dst = tok * p.y_stride + p.y_offset + row;
          float v = cs_[sg * 256 + e];
          if ((p.flags & 1u) != 0u) v += residual[dst];
          y[dst] = v;
        }
      }
      subgroupBarrier();
    }
}
