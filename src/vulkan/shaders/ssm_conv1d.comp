#version 450
// Causal depthwise conv + SiLU with a rolling per-sequence state (src/cpu/ops/ssm_conv1d.cc):
// for channel c, out[t][c] = silu(sum_i kernel[c][i] * window_i) over window = [state..., in[t]],
// then the state drops its oldest input and appends in[t]. One thread per channel walks the
// tokens in order; token t uses the state slot seq_ids[t] (state rows: K-1 inputs of C floats,
// oldest first, at slot * slot_stride + state_offset).
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 64) in;

const uint kMaxTaps = 8;

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

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= p.channels) return;
  const uint K = p.taps, C = p.channels;
  float w[kMaxTaps];
  [[unroll]] for (uint i = 0; i < kMaxTaps; ++i) w[i] = i < K ? kernel[c * K + i] : 0.0;
  for (uint t = 0; t < p.n_tokens; ++t) {
    const uint base = uint(seq_ids[t]) * p.slot_stride + p.state_offset + c;
    const float v = x[t * p.in_stride + c];
    float window[kMaxTaps];
    [[unroll]] for (uint i = 0; i + 1 < kMaxTaps; ++i) window[i] = i + 1 < K ? state[base + i * C] : 0.0;
    float sum = 0.0;
    [[unroll]] for (uint i = 0; i + 1 < kMaxTaps; ++i)
      if (i + 1 < K) sum += window[i] * w[i];
    sum += v * w[K - 1];
    [[unroll]] for (uint i = 0; i + 2 < kMaxTaps; ++i)
      if (i + 2 < K) state[base + i * C] = window[i + 1];
    if (K > 1) state[base + (K - 2) * C] = v;
    y[t * p.out_stride + c] = sum / (1.0 + exp(-sum));
  }
}
