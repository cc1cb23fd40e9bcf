#version 450
// attention_prefill.comp on NV cooperative matrices (16x16x16, f16 inputs, f32 accumulators),
// flash-attention-2 style, f16 caches only. A workgroup of 8 subgroups of 32 owns 64 query rows
// (p.hg query heads of one KV head x p.bq consecutive batch rows; row r: batch row r / hg, head
// r % hg) and walks their keys in tiles of kBC through the page table:
//   S = Q K^T: subgroup s computes row block s / 2 against half the tile's key blocks, its Q
//     fragments (f16, times the scale) held in registers for the whole walk; S goes to shared;
//   masked online softmax in f32: 4 threads per row, kBC / 4 keys each; P (f16) overwrites the
//     row's S, the row's rescale factor is written as a 16-wide row of a broadcast matrix;
//   O = O * c + P V: subgroup s holds half the dv / 16 output blocks of row block s / 2 as f32
//     accumulators, multiplied element by element by the broadcast matrix (same matrix type, so
//     the same element-to-lane mapping), then P V added.
// Rows of other sequences are served in later passes, as in attention_prefill.comp. Head dims
// are multiples of 16 up to kMaxD (128 or 256); tiles of 64 keys (128 only) or 32.
// Selected at run time where DeviceCaps::coopmat_nv_f16 and the subgroup size is 32. With
// EMULATE the matrices are emulated in scalar code (every lane holds whole matrices and owns 8
// elements of an accumulator), so the tests run this kernel's logic on devices without them.
#extension GL_EXT_control_flow_attributes : enable
#ifdef EMULATE
#define SG_SYNC() barrier()
#else
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define SG_SYNC()              \
  subgroupMemoryBarrierShared(); \
  subgroupBarrier()
#endif

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint kMaxD = 128;  // largest head dim: 128 or 256
layout(constant_id = 1) const uint kBC = 64;     // keys per tile: 64 or 32

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer Step { int step[]; };
layout(std430, binding = 2) readonly buffer KC { uvec4 kc[]; };
layout(std430, binding = 3) readonly buffer VC { uvec4 vc[]; };
layout(std430, binding = 4) writeonly buffer Out { float out_[]; };
layout(std430, binding = 5) readonly buffer Gate { float gate[]; };

layout(push_constant) uniform Push {
  uint q_stride, q_head_stride, q_offset, n_q_heads;
  uint dk, dv, n_kv_heads, group;
  uint g_stride, g_head_stride, g_offset, flags;
  uint out_stride;
  float scale;
  uint n_tokens, pad0;
  uint pos_offset, seq_offset, pages_offset, max_pages;
  uint hg, bq, pad1, pad2;  // query heads per workgroup, batch rows per workgroup (hg * bq <= 64)
} p;

const uint kRows = 64;
// Shared memory in uvec4 (8 halves, 4 floats); row strides padded by one uvec4.
const uint kKvS = kMaxD / 8 + 1;  // K or V tile row: [key][dim] f16
const uint kSS = kBC / 4 + 1;     // S row: [row][key] f32, later P [row][key] f16 in its first half
const uint kQS = 17;              // Q staging row: 128 dims f16 (Q is staged 128 dims at a time)
const uint kS0 = kBC * kKvS;      // S / P tile after the K / V tile
const uint kScl0 = kS0 + kRows * kSS;  // broadcast rescale matrix [row][16] f32
const uint kWords = kScl0 + kRows * 4;
const uint kKpt = kBC / 4;  // keys per softmax thread
shared uvec4 buf[kWords];  // also the Q staging area (kRows * kQS) and the output scratch (8 * 64)
shared float red_m[256], red_s[256];  // per-thread partial maxima and sums; at the end l per row
shared int s_pos[kRows], s_seq[kRows];

// 16x16 matrices in buf: offsets and strides in uvec4, rows (or columns) contiguous.
#ifdef EMULATE
#define SG_ID (gl_LocalInvocationID.x / 32)
#define LANE (gl_LocalInvocationID.x % 32)
struct MatA {
  float v[256];  // [row][col], f16 values
};
struct MatC {
  float v[256];  // [row][col]; this lane's elements, LANE + 32 * e, are the valid ones
};
#define MAT_LEN(m) 8
#define MAT_AT(m, e) m.v[LANE + 32u * uint(e)]
float sideat(uint word, uint h) { return unpackHalf2x16(buf[word + h / 8][(h / 2) % 4])[h % 2]; }
void load_a(out MatA m, uint at, uint stride) {
  for (uint i = 0; i < 16; ++i)
    for (uint j = 0; j < 16; ++j) m.v[16 * i + j] = sideat(at + i * stride, j);
}
void load_a_col(out MatA m, uint at, uint stride) {
  for (uint i = 0; i < 16; ++i)
    for (uint j = 0; j < 16; ++j) m.v[16 * i + j] = sideat(at + j * stride, i);
}
void load_c(out MatC m, uint at, uint stride) {
  for (uint i = 0; i < 16; ++i)
    for (uint j = 0; j < 16; ++j) m.v[16 * i + j] = uintBitsToFloat(buf[at + i * stride + j / 4][j % 4]);
}
void store_c(MatC m, uint at, uint stride) {
  for (uint e = 0; e < 8; ++e) {
    const uint x = LANE + 32 * e, i = x / 16, j = x % 16;
    buf[at + i * stride + j / 4][j % 4] = floatBitsToUint(m.v[x]);
  }
}
MatC mat_zero() {
  MatC m;
  for (uint i = 0; i < 256; ++i) m.v[i] = 0.0;
  return m;
}
MatC mul_add(MatA a, MatA b, MatC c) {  // this lane's elements only: the others are never read
  for (uint e = 0; e < 8; ++e) {
    const uint x = LANE + 32 * e, i = x / 16, j = x % 16;
    float s = c.v[x];
    for (uint k = 0; k < 16; ++k) s += a.v[16 * i + k] * b.v[16 * k + j];
    c.v[x] = s;
  }
  return c;
}
#else
#define SG_ID gl_SubgroupID
#define LANE gl_SubgroupInvocationID
#define MatA fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define MatC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define MAT_LEN(m) m.length()
#define MAT_AT(m, e) m[e]
#define load_a(m, at, stride) coopMatLoadNV(m, buf, at, stride, false)
#define load_a_col(m, at, stride) coopMatLoadNV(m, buf, at, stride, true)
#define load_c(m, at, stride) coopMatLoadNV(m, buf, at, stride, false)
#define store_c(m, at, stride) coopMatStoreNV(m, buf, at, stride, false)
#define mat_zero() MatC(0.0)
#define mul_add(a, b, c) coopMatMulAddNV(a, b, c)
#endif

uint kv_row(int seq, uint key) {
  return uint(step[p.pages_offset + uint(seq) * p.max_pages + key / 16]) * 16 + key % 16;
}

bool is_done(uvec2 done, uint b) { return ((b < 32 ? done.x >> b : done.y >> (b - 32)) & 1u) != 0u; }

void main() {
  const uint tid = gl_LocalInvocationID.x, sg = SG_ID;
  const uint n_hsub = (p.group + p.hg - 1) / p.hg;
  const uint kvh = gl_WorkGroupID.x / n_hsub, hsub = gl_WorkGroupID.x % n_hsub;
  const uint t0 = gl_WorkGroupID.y * p.bq;
  const uint R = p.hg * p.bq;
  const uint kw = p.dk / 8, vw = p.dv / 8;  // uvec4 per head row of K, V
  const uint k4 = p.n_kv_heads * kw, v4 = p.n_kv_heads * vw;  // uvec4 per pool row
  const uint rb = sg / 2;  // this subgroup's row block
  const uint side = sg % 2;  // which half of the key blocks (S) and output blocks (O) it takes

  if (tid < kRows) {
    const uint t = t0 + tid;
    s_pos[tid] = tid < p.bq && t < p.n_tokens ? step[p.pos_offset + t] : -1;
    s_seq[tid] = tid < p.bq && t < p.n_tokens ? step[p.seq_offset + t] : -1;
  }

  // Q fragments of row block rb, staged through shared memory 128 dims at a time.
  MatA qf[kMaxD / 16];
  [[unroll]] for (uint c = 0; c < kMaxD / 128; ++c) {
    for (uint i = tid; i < kRows * 16; i += 256) {
      const uint r = i / 16, w = i % 16, d = 128 * c + 8 * w;
      const uint t = t0 + r / p.hg, g = hsub * p.hg + r % p.hg;
      uvec4 v = uvec4(0u);
      if (r < R && t < p.n_tokens && g < p.group && d < p.dk) {
        const uint o = t * p.q_stride + p.q_offset + (kvh * p.group + g) * p.q_head_stride + d;
        float x[8];
        [[unroll]] for (uint e = 0; e < 8; ++e) x[e] = q[o + e] * p.scale;
        v = uvec4(packHalf2x16(vec2(x[0], x[1])), packHalf2x16(vec2(x[2], x[3])), packHalf2x16(vec2(x[4], x[5])),
                  packHalf2x16(vec2(x[6], x[7])));
      }
      buf[r * kQS + w] = v;
    }
    barrier();
    [[unroll]] for (uint kk = 8 * c; kk < 8 * c + 8; ++kk)
      if (16 * kk < p.dk) load_a(qf[kk], (16 * rb) * kQS + 2 * (kk % 8), kQS);
    barrier();
  }

  MatC o[kMaxD / 32];  // output blocks side * kMaxD / 32 + j of row block rb
  [[unroll]] for (uint j = 0; j < kMaxD / 32; ++j) o[j] = mat_zero();

  // Softmax: row sr, keys kKpt * part .. + kKpt; m and l of the row in registers (the row's 4
  // threads hold the same values).
  const uint sr = tid / 4, part = tid % 4, c0 = tid & ~3u;
  const uint sb = sr / p.hg;
  const bool row_ok = sr < R && hsub * p.hg + sr % p.hg < p.group;
  float m = -1.0 / 0.0, l = 0.0;

  uvec2 done = uvec2(0u);  // bit per block row already served
  for (;;) {
    int seq = -1, max_pos = -1;
    for (uint b = 0; b < p.bq; ++b)
      if (!is_done(done, b) && s_seq[b] >= 0 && (seq < 0 || s_seq[b] == seq)) {
        seq = s_seq[b];
        max_pos = max(max_pos, s_pos[b]);
      }
    if (seq < 0) break;
    const int row_pos = row_ok && s_seq[sb] == seq && !is_done(done, sb) ? s_pos[sb] : -1;
    for (uint base = 0; base <= uint(max_pos); base += kBC) {
      // K tile; keys past max_pos as zeros (their slots may hold anything).
      for (uint i = tid; i < kBC * kw; i += 256) {
        const uint j = i / kw, w = i % kw, key = base + j;
        buf[j * kKvS + w] = key <= uint(max_pos) ? kc[kv_row(seq, key) * k4 + kvh * kw + w] : uvec4(0u);
      }
      barrier();
      [[unroll]] for (uint i = 0; i < kBC / 32; ++i) {
        const uint kb = side * (kBC / 32) + i;
        MatC s = mat_zero();
        [[unroll]] for (uint kk = 0; kk < kMaxD / 16; ++kk)
          if (16 * kk < p.dk) {
            MatA kt;  // K^T block [dim][key]: column-major in the tile
            load_a_col(kt, (16 * kb) * kKvS + 2 * kk, kKvS);
            s = mul_add(qf[kk], kt, s);
          }
        store_c(s, kS0 + (16 * rb) * kSS + 4 * kb, kSS);
      }
      barrier();

      // V tile while the softmax runs (the K tile is no longer read).
      for (uint i = tid; i < kBC * vw; i += 256) {
        const uint j = i / vw, w = i % vw, key = base + j;
        buf[j * kKvS + w] = key <= uint(max_pos) ? vc[kv_row(seq, key) * v4 + kvh * vw + w] : uvec4(0u);
      }
      float sv[kKpt];
      float mx = -1.0 / 0.0;
      [[unroll]] for (uint e = 0; e < kKpt; ++e) {
        const uint j = kKpt * part + e;
        const float x = uintBitsToFloat(buf[kS0 + sr * kSS + j / 4][j % 4]);
        sv[e] = int(base + j) <= row_pos ? x : -1.0 / 0.0;
        mx = max(mx, sv[e]);
      }
      red_m[tid] = mx;
      SG_SYNC();  // also: every S read of the row is done before P overwrites it
      const float m_new = max(max(m, max(red_m[c0], red_m[c0 + 1])), max(red_m[c0 + 2], red_m[c0 + 3]));
      const float c = m_new == -1.0 / 0.0 ? 1.0 : exp(m - m_new);
      m = m_new;
      float sum = 0.0;
      [[unroll]] for (uint e = 0; e < kKpt; e += 8) {
        float pr[8];
        [[unroll]] for (uint k = 0; k < 8; ++k) {
          pr[k] = sv[e + k] == -1.0 / 0.0 ? 0.0 : exp(sv[e + k] - m_new);
          sum += pr[k];
        }
        buf[kS0 + sr * kSS + (kKpt * part + e) / 8] =
            uvec4(packHalf2x16(vec2(pr[0], pr[1])), packHalf2x16(vec2(pr[2], pr[3])),
                  packHalf2x16(vec2(pr[4], pr[5])), packHalf2x16(vec2(pr[6], pr[7])));
      }
      buf[kScl0 + sr * 4 + part] = uvec4(floatBitsToUint(c));
      red_s[tid] = sum;
      SG_SYNC();
      l = l * c + ((red_s[c0] + red_s[c0 + 1]) + (red_s[c0 + 2] + red_s[c0 + 3]));
      barrier();

      // O = O * c + P V over this subgroup's output blocks.
      MatC cm;
      load_c(cm, kScl0 + (16 * rb) * 4, 4);
      [[unroll]] for (uint j = 0; j < kMaxD / 32; ++j)
        if (16 * (side * (kMaxD / 32) + j) < p.dv)
          for (int e = 0; e < MAT_LEN(cm); ++e) MAT_AT(o[j], e) *= MAT_AT(cm, e);
      [[unroll]] for (uint ks = 0; ks < kBC / 16; ++ks) {
        MatA pm;
        load_a(pm, kS0 + (16 * rb) * kSS + 2 * ks, kSS);
        [[unroll]] for (uint j = 0; j < kMaxD / 32; ++j) {
          const uint db = side * (kMaxD / 32) + j;
          if (16 * db < p.dv) {
            MatA vm;
            load_a(vm, (16 * ks) * kKvS + 2 * db, kKvS);
            o[j] = mul_add(pm, vm, o[j]);
          }
        }
      }
      barrier();
    }
    for (uint b = 0; b < p.bq; ++b)
      if (s_seq[b] == seq) done[b / 32] |= 1u << (b % 32);
  }

  if (part == 0) red_m[sr] = l;
  // Output blocks through a 16x16 scratch per subgroup, rows written 16 floats at a time.
  const bool gated = (p.flags & 1u) != 0u;
  [[unroll]] for (uint j = 0; j < kMaxD / 32; ++j) {
    const uint db = side * (kMaxD / 32) + j;
    const bool live = 16 * db < p.dv;
    if (live) store_c(o[j], sg * 64, 4);
    barrier();
    for (uint e = LANE; live && e < 256; e += 32) {
      const uint r = 16 * rb + e / 16, d = 16 * db + e % 16;
      const uint t = t0 + r / p.hg, g = hsub * p.hg + r % p.hg;
      if (r < R && t < p.n_tokens && g < p.group && red_m[r] > 0.0) {
        const uint h = kvh * p.group + g;
        float v = uintBitsToFloat(buf[sg * 64 + e / 4][e % 4]) / red_m[r];
        if (gated) v *= 1.0 / (1.0 + exp(-gate[t * p.g_stride + p.g_offset + h * p.g_head_stride + d]));
        out_[t * p.out_stride + h * p.dv + d] = v;
      }
    }
    barrier();
  }
}
