// The next RMSNorm's inputs as an epilogue of a residual-adding matvec (the NORM_OUT variant of
// matvec_staged.comp, flags bit 10): beside each row of y, the row times the norm weight
// (binding 7) goes to binding 10 at y's place, and each workgroup stores the sum of squares of
// its rows of token t at binding 9, word t * slot_floats + (its first row / rows_per_group). A
// folded router's gate/up reads them (src/vulkan/router_fold.h). Include after the push block;
// aliases the conv epilogue's bindings 7 and 9.
layout(std430, binding = 7) readonly buffer NormOutWeight { float norm_out_w[]; };
layout(std430, binding = 9) writeonly buffer NormOutPartials { float norm_out_partials[]; };
layout(std430, binding = 10) writeonly buffer NormOutX { float norm_out_x[]; };

const uint kNormOutFlag = 1024u;

shared float s_norm_out[kGroupSize / kMinSubgroupSize];

// Writes row r (at index i of y) of value v weighted; returns v^2 for the workgroup's sum.
float norm_out_row(uint i, uint r, float v) {
  norm_out_x[i] = v * norm_out_w[r];
  return v * v;
}

// Called by every invocation after the token's rows: stores the workgroup's sum of squares.
void norm_out_partial(uint t, uint row0, float ss) {
  const float s = subgroupAdd(ss);
  if (subgroupElect()) s_norm_out[gl_SubgroupID] = s;
  barrier();
  if (gl_LocalInvocationID.x == 0 && row0 < p.rows) {
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) total += s_norm_out[i];
    norm_out_partials[t * p.slot_floats + row0 / p.rows_per_group] = total;
  }
}
