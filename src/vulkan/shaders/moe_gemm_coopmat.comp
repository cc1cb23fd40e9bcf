#version 450
// moe_gemm.comp on NV cooperative matrices (16x16x16, f16 inputs, f32 accumulators): K in
// steps of 64, each step's weight words and x rows loaded, decoded to f16 into shared memory
// and multiplied. (Loading the next step into registers while the current one multiplies was
// slower on the H200: Qwen3-30B-A3B pp512 8428 against 8296 tok/s, Qwen3.5-35B-A3B 7560
// against 7460; same registers, 147-159.) Tiles of kBM = kThreads * 16 / kBN rows x kBN slots
// of one expert (moe_gemm.comp's at 256 threads; ops::MoeGemm runs 128); the subgroups form a
// (kBM / 16) x (kBN / 32) grid of 16 rows x 32 slots each (per matrix of the pair). Results go
// through shared memory to the slots' rows (silu(gate) * up for pairs).
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define TWO_WEIGHTS
#include "quant.glsl"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const bool kPair = false;
layout(constant_id = 1) const uint kBN = 64;  // slots per tile: 64 or 32
layout(constant_id = 2) const uint kThreads = 256;  // 128 or 256 (4 or 8 subgroups)
layout(std430, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 2) readonly buffer X1 { float x1[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer Order { uint order[]; };
layout(std430, binding = 5) readonly buffer Tiles { uvec4 tiles[]; };

layout(push_constant) uniform Push {
  uint rows;  // of one expert
  uint cols;
  uint k;
  uint x_stride;
  uint y_stride;
  uint pad0, pad1, pad2;
  uvec4 planes0;
  uvec4 planes1;
} p;

const uint kBM = kThreads * 16 / kBN, kSgRows = kBM / 16;
const uint kMats = kPair ? 2 : 1;
const uint kStride = 9;                            // uvec4 per tile row: 64 halves + 8 of padding
const uint kAPer = (2 * kBM + kThreads - 1) / kThreads;  // weight groups per thread, matrix and step
const uint kBPer = kBN * 8 / kThreads;                   // runs of 8 x values per thread per step

shared uvec4 as_[kMats * kBM * kStride];  // W tiles [mat][row][k], f16
shared uvec4 bs_[kBN * kStride];          // x tile [slot][k], f16
shared uint s_xrow[kBN], s_slot[kBN];

RawGroup ra_[kMats * kAPer];  // [mat][i]: each load's matrix is known at compile time
vec4 rb_[kBPer * 2];
uint tid_, tile_r_, erow_, groups_, blocks_, n_slots_;

vec4 load_x(uint t, uint kk) {
  vec4 v = vec4(0.0);
  if (t < n_slots_) {
    const uint base = s_xrow[t] * p.x_stride;
    if (kk + 4 <= p.cols) {
      v = x4[(base + kk) / 4];
    } else {
      [[unroll]] for (uint i = 0; i < 4; ++i) v[i] = kk + i < p.cols ? x1[base + kk + i] : 0.0;
    }
  }
  return v;
}

void fetch(uint s) {
  [[unroll]] for (uint m = 0; m < kMats; ++m)
    [[unroll]] for (uint i = 0; i < kAPer; ++i) {
      const uint idx = tid_ + kThreads * i, g = 2 * s + idx % 2;
      if (idx < 2 * kBM && g < groups_) {
        const uint row = erow_ + min(tile_r_ + idx / 2, p.rows - 1);
        ra_[m * kAPer + i] = load_raw(m, m == 0 ? p.planes0 : p.planes1, row * groups_ + g,
                                      row * blocks_ + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      }
    }
  [[unroll]] for (uint i = 0; i < kBPer; ++i) {
    const uint e = tid_ + kThreads * i, t = e / 8, kk = 64 * s + 8 * (e % 8);
    rb_[2 * i] = load_x(t, kk);
    rb_[2 * i + 1] = load_x(t, kk + 4);
  }
}

uvec4 pack8(vec4 a, vec4 b) {
  return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

void stage(uint s) {
  [[unroll]] for (uint m = 0; m < kMats; ++m)
    [[unroll]] for (uint i = 0; i < kAPer; ++i) {
      const uint idx = tid_ + kThreads * i, g = 2 * s + idx % 2;
      if (idx < 2 * kBM) {
        const uint base = (m * kBM + idx / 2) * kStride + 4 * (idx % 2);
        if (g < groups_) {
          const uint row = erow_ + min(tile_r_ + idx / 2, p.rows - 1);
          const Group gr = decode_group(ra_[m * kAPer + i], row * blocks_ + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
          [[unroll]] for (uint q = 0; q < 4; ++q)
            as_[base + q] = pack8(group_values(gr, 2 * q), group_values(gr, 2 * q + 1));
        } else {
          [[unroll]] for (uint q = 0; q < 4; ++q) as_[base + q] = uvec4(0u);
        }
      }
    }
  [[unroll]] for (uint i = 0; i < kBPer; ++i) {
    const uint e = tid_ + kThreads * i;
    bs_[(e / 8) * kStride + e % 8] = pack8(rb_[2 * i], rb_[2 * i + 1]);
  }
}

void main() {
  init_codebook();
  const uvec4 tile = tiles[gl_WorkGroupID.y];
  if (tile.z == 0) return;  // past the last tile: the whole workgroup leaves
  tid_ = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  tile_r_ = gl_WorkGroupID.x * kBM;
  erow_ = tile.x * p.rows;
  n_slots_ = tile.z;
  groups_ = (p.cols + 31) / 32;
  blocks_ = groups_ / BLOCK_GROUPS;
  if (tid_ < kBN) {
    const uint slot = tid_ < tile.z ? order[tile.y + tid_] : 0;
    s_slot[tid_] = slot;
    s_xrow[tid_] = kPair ? slot / p.k : slot;
  }
  barrier();
  const uint wr = 16 * (sg % kSgRows), wt = 32 * (sg / kSgRows);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[kMats * 2];
  [[unroll]] for (uint i = 0; i < kMats * 2; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  const uint steps = (groups_ + 1) / 2;
  fetch(0);
  stage(0);
  barrier();
  for (uint s = 0; s < steps; ++s) {
    [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[2];
      [[unroll]] for (uint j = 0; j < 2; ++j) coopMatLoadNV(b[j], bs_, (wt + 16 * j) * kStride + 2 * kk, kStride, true);
      [[unroll]] for (uint m = 0; m < kMats; ++m) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
        coopMatLoadNV(a, as_, (m * kBM + wr) * kStride + 2 * kk, kStride, false);
        [[unroll]] for (uint j = 0; j < 2; ++j) acc[m * 2 + j] = coopMatMulAddNV(a, b[j], acc[m * 2 + j]);
      }
    }
    barrier();
    if (s + 1 < steps) {
      fetch(s + 1);
      stage(s + 1);
      barrier();
    }
  }

  // Through this subgroup's 16x16 floats of as_ (kMats of them; column-major: element (row,
  // slot) at slot * 16 + row).
  const uint region = sg * 64 * kMats;
  [[unroll]] for (uint j = 0; j < 2; ++j) {
    const uint t0 = wt + 16 * j;
    if (t0 >= tile.z || tile_r_ + wr >= p.rows) continue;
    [[unroll]] for (uint m = 0; m < kMats; ++m) coopMatStoreNV(acc[m * 2 + j], as_, region + 64 * m, 4, true);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = lane; e < 256; e += gl_SubgroupSize) {
      const uint row = tile_r_ + wr + e % 16, t = t0 + e / 16;
      if (row < p.rows && t < tile.z) {
        float v = uintBitsToFloat(as_[region + e / 4][e % 4]);
        if (kPair) {
          const float u = uintBitsToFloat(as_[region + 64 + e / 4][e % 4]);
          v = v / (1.0 + exp(-v)) * u;
        }
        y[s_slot[t] * p.y_stride + row] = v;
      }
    }
    subgroupBarrier();
  }
}
