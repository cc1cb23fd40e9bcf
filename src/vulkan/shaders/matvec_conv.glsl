// The causal depthwise conv + SiLU of ssm_conv1d.comp as a matvec epilogue (flags bit 2): the
// invocation that writes row r of token t passes the row's value through the conv of channel
// y_offset + r with the state slot seq_ids[t], and rolls that channel's state. Every token's row
// r is written by the same invocation, tokens in order, so the state needs no synchronisation.
// Include after the push block (conv_taps, conv_channels, slot_floats, state_offset).
layout(std430, binding = 7) readonly buffer ConvKernel { float conv_kernel[]; };  // [channels][taps]
layout(std430, binding = 8) readonly buffer ConvSeq { int conv_seq_ids[]; };
layout(std430, binding = 9) buffer ConvState { float conv_state[]; };

const uint kConvFlag = 4u;

// Returns silu(sum_i kernel[c][i] * window_i) over window = [state of c..., v]; the state of c
// then drops its oldest input and appends v. Sums in the order of ssm_conv1d.comp.
float conv_epilogue(uint t, uint c, float v) {
  const uint K = p.conv_taps, C = p.conv_channels;
  const uint base = uint(conv_seq_ids[t]) * p.slot_floats + p.state_offset + c;
  float sum = 0.0;
  for (uint i = 0; i + 1 < K; ++i) {
    const float s = conv_state[base + i * C];
    sum += s * conv_kernel[c * K + i];
    if (i > 0) conv_state[base + (i - 1) * C] = s;
  }
  sum += v * conv_kernel[c * K + K - 1];
  if (K > 1) conv_state[base + (K - 2) * C] = v;
  return sum / (1.0 + exp(-sum));
}
