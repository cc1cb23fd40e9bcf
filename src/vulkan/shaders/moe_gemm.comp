#version 450
// Prefill expert GEMM over slots grouped by expert (moe_group.comp): workgroup (x, y) computes
// rows kBM x .. + kBM of expert e for the up to kBN slots of tile y = (e, begin, count):
//   kPair: y[s][r] = silu(W0[e] x[s / k])[r] * (W1[e] x[s / k])[r]
//   else:  y[s][r] = (W0[e] x[s])[r]
// for s = order[begin + i], i < count. W dequantized tile by tile into shared memory as in
// gemm.comp (256 threads, 4 rows x 4 slots each, K in steps of 32), float32 math. Tiles of
// 64 rows x 64 slots, or 128 x 32 for experts with few slots (kBN = 32).
#define TWO_WEIGHTS
#include "quant.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool kPair = false;
layout(constant_id = 1) const uint kBN = 64;  // slots per tile: 64 or 32
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

const uint kBM = 4096 / kBN, kThreadsR = kBM / 4, kStride = 9;
const uint kMats = kPair ? 2 : 1;
shared vec4 ws[kMats * kBM * kStride];  // [mat][row][k / 4]
shared vec4 xs[kBN * kStride];          // [slot][k / 4]
shared uint s_xrow[kBN];

void main() {
  init_codebook();
  const uvec4 tile = tiles[gl_WorkGroupID.y];
  if (tile.z == 0) return;  // past the last tile: the whole workgroup leaves
  const uint tid = gl_LocalInvocationID.x;
  const uint tile_r = gl_WorkGroupID.x * kBM;
  const uint tr = tid % kThreadsR, tc = tid / kThreadsR;
  const uint groups = (p.cols + 31) / 32, blocks = groups / BLOCK_GROUPS;
  const uint erow = tile.x * p.rows;
  if (tid < kBN) s_xrow[tid] = tid < tile.z ? (kPair ? order[tile.y + tid] / p.k : order[tile.y + tid]) : 0;
  barrier();
  vec4 acc[kMats * 4];
  [[unroll]] for (uint j = 0; j < kMats * 4; ++j) acc[j] = vec4(0.0);

  for (uint g = 0; g < groups; ++g) {
    for (uint wi = tid; wi < kMats * kBM; wi += 256) {
      const uint which = wi / kBM, r = wi % kBM;
      const uint row = erow + min(tile_r + r, p.rows - 1);
      const Group gr = load_group(which, which == 0 ? p.planes0 : p.planes1, row * groups + g,
                                  row * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      [[unroll]] for (uint j = 0; j < 8; ++j) ws[wi * kStride + j] = group_values(gr, j);
    }
    [[unroll]] for (uint e = tid; e < kBN * 8; e += 256) {
      const uint t = e / 8, j = e % 8, kk = 32 * g + 4 * j;
      vec4 v = vec4(0.0);
      if (t < tile.z) {
        const uint base = s_xrow[t] * p.x_stride;
        if (kk + 4 <= p.cols) {
          v = x4[(base + kk) / 4];
        } else {
          [[unroll]] for (uint i = 0; i < 4; ++i) v[i] = kk + i < p.cols ? x1[base + kk + i] : 0.0;
        }
      }
      xs[t * kStride + j] = v;
    }
    barrier();
    for (uint kq = 0; kq < 8; ++kq) {
      vec4 b[4];
      [[unroll]] for (uint j = 0; j < 4; ++j) b[j] = xs[(4 * tc + j) * kStride + kq];
      [[unroll]] for (uint m = 0; m < kMats; ++m) {
        vec4 a[4];
        [[unroll]] for (uint i = 0; i < 4; ++i) a[i] = ws[(m * kBM + 4 * tr + i) * kStride + kq];
        [[unroll]] for (uint j = 0; j < 4; ++j)
          [[unroll]] for (uint i = 0; i < 4; ++i) acc[m * 4 + j][i] += dot(a[i], b[j]);
      }
    }
    barrier();
  }

  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint t = 4 * tc + j;
    if (t >= tile.z) break;
    const uint slot = order[tile.y + t];
    [[unroll]] for (uint i = 0; i < 4; ++i) {
      const uint row = tile_r + 4 * tr + i;
      if (row >= p.rows) break;
      float v = acc[j][i];
      if (kPair) v = v / (1.0 + exp(-v)) * acc[4 + j][i];
      y[slot * p.y_stride + row] = v;
    }
  }
}
