#version 450
// Groups the slots s = t * k + j of a batch by expert for the prefill expert GEMMs: one
// workgroup counts the slots of each expert, scans the counts, writes order[] (slot indices,
// grouped by expert; the order within an expert is not fixed) and the tile list: one
// (expert, begin, count) per kTile slots of an expert, then (0, 0, 0) up to max_tiles.
layout(local_size_x = 256) in;
const uint kMaxExperts = 1024;
layout(constant_id = 0) const uint kTile = 64;

layout(std430, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, binding = 1) writeonly buffer Order { uint order[]; };
layout(std430, binding = 2) writeonly buffer Tiles { uvec4 tiles[]; };

layout(push_constant) uniform Push {
  uint n_slots;
  uint n_expert;
  uint max_tiles;
  uint pad;
} p;

shared uint s_count[kMaxExperts];
shared uint s_start[kMaxExperts];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  for (uint e = tid; e < p.n_expert; e += 256) s_count[e] = 0;
  barrier();
  for (uint s = tid; s < p.n_slots; s += 256) atomicAdd(s_count[min(uint(ids[s]), p.n_expert - 1)], 1u);
  barrier();
  if (tid == 0) {
    uint start = 0, n = 0;
    for (uint e = 0; e < p.n_expert; ++e) {
      const uint c = s_count[e];
      s_start[e] = start;
      for (uint b = 0; b < c; b += kTile) tiles[n++] = uvec4(e, start + b, min(kTile, c - b), 0);
      start += c;
      s_count[e] = 0;
    }
    for (; n < p.max_tiles; ++n) tiles[n] = uvec4(0);
  }
  barrier();
  for (uint s = tid; s < p.n_slots; s += 256) {
    const uint e = min(uint(ids[s]), p.n_expert - 1);
    order[s_start[e] + atomicAdd(s_count[e], 1u)] = s;
  }
}
