// Workgroup reductions for shaders with kGroupSize threads (a power of two) and a spec constant
// kMinSubgroupSize (1 when SUBGROUP is not defined). Every thread must call them; every thread
// gets the result.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float s_red[kGroupSize / kMinSubgroupSize];
shared uint s_red_index[kGroupSize / kMinSubgroupSize];

float workgroup_sum(float v) {
#ifdef SUBGROUP
  const float s = subgroupAdd(v);
  if (subgroupElect()) s_red[gl_SubgroupID] = s;
  barrier();
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += s_red[i];
#else
  const uint tid = gl_LocalInvocationIndex;
  s_red[tid] = v;
  barrier();
  for (uint s = kGroupSize / 2; s > 0; s >>= 1) {
    if (tid < s) s_red[tid] += s_red[tid + s];
    barrier();
  }
  const float total = s_red[0];
#endif
  barrier();
  return total;
}

// The largest v over the workgroup and the smallest index holding it (NaN never wins).
void workgroup_argmax(inout float v, inout uint index) {
#ifdef SUBGROUP
  const float m = subgroupMax(v);
  const uint i = subgroupMin(v == m ? index : 0xFFFFFFFFu);
  if (subgroupElect()) {
    s_red[gl_SubgroupID] = m;
    s_red_index[gl_SubgroupID] = i;
  }
  barrier();
  v = s_red[0];
  index = s_red_index[0];
  for (uint k = 1; k < gl_NumSubgroups; ++k)
    if (s_red[k] > v || (s_red[k] == v && s_red_index[k] < index)) {
      v = s_red[k];
      index = s_red_index[k];
    }
#else
  const uint tid = gl_LocalInvocationIndex;
  s_red[tid] = v;
  s_red_index[tid] = index;
  barrier();
  for (uint s = kGroupSize / 2; s > 0; s >>= 1) {
    if (tid < s) {
      const float o = s_red[tid + s];
      const uint oi = s_red_index[tid + s];
      if (o > s_red[tid] || (o == s_red[tid] && oi < s_red_index[tid])) {
        s_red[tid] = o;
        s_red_index[tid] = oi;
      }
    }
    barrier();
  }
  v = s_red[0];
  index = s_red_index[0];
#endif
  barrier();
}
