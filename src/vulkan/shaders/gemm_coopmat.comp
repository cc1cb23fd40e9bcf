#version 450
// As gemm.comp, on NV cooperative matrices (16x16x16, f16 inputs, f32 accumulators). A
// workgroup of 8 subgroups of 32 computes kBM rows x kBN tokens (specialization constants);
// the subgroups form a kSgRows x (8 / kSgRows) grid, each holding kMI x kNJ accumulators. K
// runs in steps of 64 (two weight groups per row): after the matrices of a step multiply, every
// thread loads its share of the next step's weight words and x, decodes them to f16 and stores
// them into shared memory (16-byte stores, rows padded to 144 bytes). (Loading the next step
// into registers while the current one multiplies was slower on the H200: Llama-3-8B pp512
// 7470 against 7780 tok/s.) Full output matrices are stored straight from the accumulators
// (residual loaded the same way) where flags bit 1 says y is 16-byte aligned; others go through
// shared memory.
// Selected at run time where DeviceCaps::coopmat_nv_f16 and the subgroup size is 32. Split
// over K as gemm.comp (split_groups even).
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#include "quant.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint kBM = 128;     // rows per workgroup: 64 or 128
layout(constant_id = 1) const uint kBN = 128;     // tokens per workgroup: 32, 64 or 128
layout(constant_id = 2) const uint kSgRows = 2;   // subgroups along the rows: 1, 2, 4 or 8
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer X1 { float x1[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer R { float residual[]; };

layout(push_constant) uniform Push {
  uint rows, cols, n_tokens, x_stride, y_stride, y_offset;
  uint flags;  // bit 0: add the residual; bit 1: y, residual and their strides are 16-byte aligned
  uint split_groups;  // 0: all of K
  uvec4 planes;
} p;

const uint kSgCols = 8 / kSgRows;
const uint kMI = kBM / (16 * kSgRows), kNJ = kBN / (16 * kSgCols);
const uint kStride = 9;                    // uvec4 per tile row: 64 halves + 8 of padding
const uint kAPer = (2 * kBM + 255) / 256;  // weight groups per thread per step
const uint kBPer = kBN / 32;               // runs of 8 x values per thread per step

shared uvec4 as_[kBM * kStride];  // W tile [row][k], f16
shared uvec4 bs_[kBN * kStride];  // x tile [token][k], f16

RawGroup ra_[kAPer];
vec4 rb_[kBPer * 2];
uint tid_, tile_r_, tile_t_, groups_, blocks_;

vec4 load_x(uint tok, uint k) {
  vec4 v = vec4(0.0);
  if (tok < p.n_tokens) {
    if (k + 4 <= p.cols) {
      v = x4[(tok * p.x_stride + k) / 4];
    } else {
      [[unroll]] for (uint i = 0; i < 4; ++i) v[i] = k + i < p.cols ? x1[tok * p.x_stride + k + i] : 0.0;
    }
  }
  return v;
}

// Global loads of step s into registers.
void fetch(uint s) {
  [[unroll]] for (uint i = 0; i < kAPer; ++i) {
    const uint idx = tid_ + 256 * i, g = 2 * s + idx % 2;
    if (idx < 2 * kBM && g < groups_) {
      const uint row = min(tile_r_ + idx / 2, p.rows - 1);
      ra_[i] = load_raw(0, p.planes, row * groups_ + g, row * blocks_ + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
    }
  }
  [[unroll]] for (uint i = 0; i < kBPer; ++i) {
    const uint e = tid_ + 256 * i, tok = tile_t_ + e / 8, k = 64 * s + 8 * (e % 8);
    rb_[2 * i] = load_x(tok, k);
    rb_[2 * i + 1] = load_x(tok, k + 4);
  }
}

uvec4 pack8(vec4 a, vec4 b) {
  return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

// Registers of step s, decoded, into shared memory.
void stage(uint s) {
  [[unroll]] for (uint i = 0; i < kAPer; ++i) {
    const uint idx = tid_ + 256 * i, g = 2 * s + idx % 2;
    if (idx < 2 * kBM) {
      const uint base = (idx / 2) * kStride + 4 * (idx % 2);
      if (g < groups_) {
        const uint row = min(tile_r_ + idx / 2, p.rows - 1);
        const Group gr = decode_group(ra_[i], row * blocks_ + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
        [[unroll]] for (uint q = 0; q < 4; ++q)
          as_[base + q] = pack8(group_values(gr, 2 * q), group_values(gr, 2 * q + 1));
      } else {
        [[unroll]] for (uint q = 0; q < 4; ++q) as_[base + q] = uvec4(0u);
      }
    }
  }
  [[unroll]] for (uint i = 0; i < kBPer; ++i) {
    const uint e = tid_ + 256 * i;
    bs_[(e / 8) * kStride + e % 8] = pack8(rb_[2 * i], rb_[2 * i + 1]);
  }
}

void main() {
  init_codebook();
  tid_ = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  tile_t_ = gl_WorkGroupID.x * kBN;
  tile_r_ = gl_WorkGroupID.y * kBM;
  groups_ = (p.cols + 31) / 32;
  blocks_ = groups_ / BLOCK_GROUPS;
  const uint wr = 16 * kMI * (sg % kSgRows), wt = 16 * kNJ * (sg / kSgRows);
  // Full matrices with aligned y go straight to memory (column-major: element (row, token) at
  // token * y_stride + row), starting from the residual; the rest through shared memory.
  const bool add = (p.flags & 1u) != 0u, direct = (p.flags & 2u) != 0u;
  const uint y_offset = p.y_offset + gl_WorkGroupID.z * p.n_tokens * p.y_stride;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[kMI * kNJ];
  [[unroll]] for (uint i = 0; i < kMI; ++i)
    [[unroll]] for (uint j = 0; j < kNJ; ++j) {
      const uint row0 = tile_r_ + wr + 16 * i, tok0 = tile_t_ + wt + 16 * j;
      if (add && direct && row0 + 16 <= p.rows && tok0 + 16 <= p.n_tokens)
        coopMatLoadNV(acc[i * kNJ + j], residual, tok0 * p.y_stride + y_offset + row0, p.y_stride, true);
      else
        acc[i * kNJ + j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }

  const uint s0 = gl_WorkGroupID.z * p.split_groups / 2;
  const uint steps = p.split_groups == 0u ? (groups_ + 1) / 2 : min((groups_ + 1) / 2, s0 + p.split_groups / 2);
  fetch(s0);
  stage(s0);
  barrier();
  for (uint s = s0; s < steps; ++s) {
    [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[kMI];
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[kNJ];
      [[unroll]] for (uint i = 0; i < kMI; ++i) coopMatLoadNV(a[i], as_, (wr + 16 * i) * kStride + 2 * kk, kStride, false);
      [[unroll]] for (uint j = 0; j < kNJ; ++j) coopMatLoadNV(b[j], bs_, (wt + 16 * j) * kStride + 2 * kk, kStride, true);
      [[unroll]] for (uint i = 0; i < kMI; ++i)
        [[unroll]] for (uint j = 0; j < kNJ; ++j) acc[i * kNJ + j] = coopMatMulAddNV(a[i], b[j], acc[i * kNJ + j]);
    }
    barrier();
    if (s + 1 < steps) {
      fetch(s + 1);
      stage(s + 1);
      barrier();
    }
  }

  [[unroll]] for (uint i = 0; i < kMI; ++i)
    [[unroll]] for (uint j = 0; j < kNJ; ++j) {
      const uint row0 = tile_r_ + wr + 16 * i, tok0 = tile_t_ + wt + 16 * j;
      if (row0 >= p.rows || tok0 >= p.n_tokens) continue;
      if (direct && row0 + 16 <= p.rows && tok0 + 16 <= p.n_tokens) {
        coopMatStoreNV(acc[i * kNJ + j], y, tok0 * p.y_stride + y_offset + row0, p.y_stride, true);
        continue;
      }
      coopMatStoreNV(acc[i * kNJ + j], as_, sg * 64, 4, true);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < 256; e += gl_SubgroupSize) {
        const uint row = row0 + e % 16, tok = tok0 + e / 16;
        if (row < p.rows && tok < p.n_tokens) {
          const uint dst = tok * p.y_stride + y_offset + row;
          float v = uintBitsToFloat(as_[sg * 64 + e / 4][e % 4]);
          if (add) v += residual[dst];
          y[dst] = v;
        }
      }
      subgroupBarrier();
    }
}
