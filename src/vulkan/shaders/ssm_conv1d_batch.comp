#version 450
// Causal depthwise conv + SiLU with a rolling per-sequence state (src/cpu/ops/ssm_conv1d.cc) for
// many tokens at once: every output is independent. Token t of sequence s = seq_ids[t], channel c:
// out[t][c] = silu(sum_i kernel[c][i] * window_i), window = the K-1 inputs of s before t (earlier
// batch tokens of s, then the slot's state as it was at the dispatch start) and in[t]. A
// workgroup owns kChannels channels for all tokens (lanes = channels, kGroups contiguous token
// ranges), so the state reads of its channels all happen before its barrier; after it, the thread
// holding each sequence's last token writes that sequence's new state (its last K-1 inputs).
// State rows: K-1 inputs of C floats, oldest first, at slot * slot_stride + state_offset.
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 256) in;

const uint kChannels = 32;
const uint kGroups = 8;  // 256 / kChannels
const uint kMaxTaps = 8;
const uint kW = kMaxTaps - 1;  // window slots; the window's newest input is win[kW - 1]
const uint kUnroll = 8;        // tokens whose loads are issued together

layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Kernel { float kernel[]; };  // [C][K]
layout(std430, binding = 2) readonly buffer Seq { int seq_ids[]; };
layout(std430, binding = 3) buffer State { float state[]; };
layout(std430, binding = 4) writeonly buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint channels;
  uint taps;  // K
  uint n_tokens;
  uint in_stride;
  uint out_stride;
  uint slot_stride;   // floats per state slot
  uint state_offset;  // floats from a slot's start to this layer's conv state
  uint pad;
} p;

// The K-1 inputs of sequence s before token t in win[kW-K+1 .. kW-1] (oldest first): earlier
// batch tokens of s, then the old state's newest rows.
void gather(uint t, int s, uint c, inout float win[kW]) {
  const uint K = p.taps, C = p.channels;
  const uint base = uint(s) * p.slot_stride + p.state_offset + c;
  uint u = t, found = 0;
  [[unroll]] for (uint d = 1; d <= kW; ++d) {  // distance back from t
    if (d < K) {
      while (u > 0 && seq_ids[u - 1] != s) --u;
      if (u > 0) {
        --u;
        ++found;
        win[kW - d] = x[u * p.in_stride + c];
      } else {
        win[kW - d] = state[base + (K - 1 - (d - found)) * C];  // d - found: distance into the state
      }
    }
  }
}

void main() {
  const uint lane = gl_LocalInvocationID.x % kChannels, group = gl_LocalInvocationID.x / kChannels;
  const uint c = gl_WorkGroupID.x * kChannels + lane;
  const bool live = c < p.channels;
  const uint K = p.taps, T = p.n_tokens;
  const uint t_begin = T * group / kGroups, t_end = T * (group + 1) / kGroups;  // T < 2^29
  const uint cc = live ? c : 0;

  // wa[i] weighs win[i]; the last tap weighs the token's own input.
  float wa[kW];
  [[unroll]] for (uint i = 0; i < kW; ++i) wa[i] = live && i + K >= kW + 1 ? kernel[cc * K + i + K - 1 - kW] : 0.0;
  const float w_last = live ? kernel[cc * K + K - 1] : 0.0;

  float win[kW];
  [[unroll]] for (uint i = 0; i < kW; ++i) win[i] = 0.0;
  int cur = -1;  // sequence whose window win holds (for the next token of it)
  if (live) {
    for (uint t = t_begin; t < t_end; t += kUnroll) {
      float v[kUnroll];
      int s[kUnroll];
      [[unroll]] for (uint i = 0; i < kUnroll; ++i) {
        s[i] = t + i < t_end ? seq_ids[t + i] : -1;
        v[i] = t + i < t_end ? x[(t + i) * p.in_stride + c] : 0.0;
      }
      [[unroll]] for (uint i = 0; i < kUnroll; ++i) {
        if (t + i < t_end) {
          if (s[i] != cur) {
            gather(t + i, s[i], c, win);
            cur = s[i];
          }
          float sum = 0.0;  // oldest first, as the CPU adds
          [[unroll]] for (uint j = 0; j < kW; ++j) sum += wa[j] * win[j];
          sum += v[i] * w_last;
          y[(t + i) * p.out_stride + c] = sum / (1.0 + exp(-sum));
          [[unroll]] for (uint j = 0; j + 1 < kW; ++j) win[j] = win[j + 1];
          win[kW - 1] = v[i];
        }
      }
    }
  }
  memoryBarrierBuffer();
  barrier();  // every old-state read of these channels is done
  if (!live || K < 2) return;
  for (uint t = t_begin; t < t_end; ++t) {
    const int s = seq_ids[t];
    if (t + 1 < T && seq_ids[t + 1] == s) continue;
    bool last = true;
    for (uint u = t + 2; u < T && last; ++u) last = seq_ids[u] != s;
    if (!last) continue;
    gather(t + 1, s, c, win);
    const uint base = uint(s) * p.slot_stride + p.state_offset + c;
    [[unroll]] for (uint i = 0; i + 1 < kMaxTaps; ++i)
      if (i + 1 < K) state[base + i * p.channels] = win[kW - (K - 1) + i];
  }
}
