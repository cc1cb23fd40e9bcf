// The causal depthwise conv + SiLU of ssm_conv1d.comp as a matvec epilogue (flags bit 2): the
// invocation that writes row r of token t passes the row's value through the conv of channel
// y_offset + r with the state slot seq_ids[t], and rolls that channel's state. Every token's row
// r is written by the same invocation, tokens in order, so the state needs no synchronisation.
// Include after the push block (conv_taps, conv_channels, slot_floats, state_offset).
layout(std430, binding = 7) readonly buffer ConvKernel { float conv_kernel[]; };  // [channels][taps]
layout(std430, binding = 8) readonly buffer ConvSeq { int conv_seq_ids[]; };
layout(std430, binding = 9) buffer ConvState { float conv_state[]; };

const uint kConvFlag = 4u;

const uint kConvMaxTaps = 8;

// Token t's state slot (loaded ahead of the row it serves: conv_epilogue takes it).
uint conv_slot(uint t) { return uint(conv_seq_ids[t]); }

// Returns silu(sum_i kernel[c][i] * window_i) over window = [state of c..., v] in state slot
// `slot`; the state of c then drops its oldest input and appends v. Sums in the order of
// ssm_conv1d.comp; every load is issued before the first store (the stores could alias them for
// all the compiler knows).
float conv_epilogue(uint slot, uint c, float v) {
  const uint K = p.conv_taps, C = p.conv_channels;
  const uint base = slot * p.slot_floats + p.state_offset + c;
  float window[kConvMaxTaps], w[kConvMaxTaps];
  [[unroll]] for (uint i = 0; i < kConvMaxTaps; ++i) {
    window[i] = i + 1 < K ? conv_state[base + i * C] : 0.0;
    w[i] = i < K ? conv_kernel[c * K + i] : 0.0;
  }
  float sum = 0.0, last = 0.0;
  [[unroll]] for (uint i = 0; i + 1 < kConvMaxTaps; ++i) {
    if (i + 1 < K) sum += window[i] * w[i];
    if (i + 1 == K) last = w[i];
  }
  if (K == kConvMaxTaps) last = w[kConvMaxTaps - 1];
  sum += v * last;
  [[unroll]] for (uint i = 0; i + 2 < kConvMaxTaps; ++i)
    if (i + 2 < K) conv_state[base + i * C] = window[i + 1];
  if (K > 1) conv_state[base + (K - 2) * C] = v;
  return sum / (1.0 + exp(-sum));
}
