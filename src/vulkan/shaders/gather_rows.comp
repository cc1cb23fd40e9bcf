#version 450
// out[i] = in[rows[rows_offset + i]] (rows of `cols` floats), one workgroup per output row.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Rows { int rows[]; };
layout(std430, binding = 2) writeonly buffer Out { float y[]; };
layout(push_constant) uniform Push { uint cols, rows_offset; } p;

void main() {
  const uint i = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint src = uint(rows[p.rows_offset + i]);
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += 256) y[i * p.cols + c] = x[src * p.cols + c];
}
