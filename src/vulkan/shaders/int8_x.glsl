// x as int8 in shared memory, for the kernels that stage it once a workgroup (matvec_staged.comp,
// attention_o.comp): the includer declares s_xq (two uvec4 of codes a 32-group), s_xf (scale,
// float sums of the two halves, a free component) and s_xs (code sums of the halves). Include after
// quant.glsl and int8_dot.glsl, with subgroup shuffles enabled.

// Stores values 4j..4j+3 of group g, xv, quantized: called by eight aligned invocations of a
// subgroup a group (j = the invocation's index & 7), which meet through shuffles. Leaves s_xf[g].w
// alone (the includer's).
void stage_x_quad(uint g, uint j, vec4 xv) {
  const vec4 a = abs(xv);
  float amax = max(max(a.x, a.y), max(a.z, a.w));
  amax = max(amax, subgroupShuffleXor(amax, 1u));
  amax = max(amax, subgroupShuffleXor(amax, 2u));
  amax = max(amax, subgroupShuffleXor(amax, 4u));
  const uint q = packSnorm4x8(xv * (amax > 0.0 ? 1.0 / amax : 0.0));
  float fs = (xv.x + xv.y) + (xv.z + xv.w);
  int cs = sdot4(0x01010101u, q);
  fs += subgroupShuffleXor(fs, 1u);
  cs += subgroupShuffleXor(cs, 1u);
  fs += subgroupShuffleXor(fs, 2u);
  cs += subgroupShuffleXor(cs, 2u);
  s_xq[2 * g + (j >> 2)][j & 3u] = q;
  if (j == 0u) {  // the first half's sums; the scale
    s_xf[g].xy = vec2(amax / 127.0, fs);
    s_xs[g].x = cs;
  } else if (j == 4u) {  // the second half's
    s_xf[g].z = fs;
    s_xs[g].y = cs;
  }
}

// One group of one row against one group of x: codes xa, xb, (scale, float sums), code sums.
float x_dot(Group gr, uvec4 xa, uvec4 xb, vec4 xf, ivec2 xs) {
  int s0 = 0, s1 = 0;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    s0 += sdot4(gr.c[0][j], xa[j]);
    s1 += sdot4(gr.c[1][j], xb[j]);
  }
#ifdef CODE_CENTER
  s0 -= CODE_CENTER * xs.x;
  s1 -= CODE_CENTER * xs.y;
#endif
  float r = xf.x * (gr.ab.x * float(s0) + gr.ab.y * float(s1));
#if defined(CODE_CENTER)
  r += (gr.ab.z + CODE_CENTER * gr.ab.x) * xf.y + (gr.ab.w + CODE_CENTER * gr.ab.y) * xf.z;
#elif defined(HAS_OFFSET)
  r += gr.ab.z * xf.y + gr.ab.w * xf.z;
#endif
  return r;
}
