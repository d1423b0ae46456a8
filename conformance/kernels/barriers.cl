// A kernel with work-group barriers of its own and no group function, for
// adapters/opencl/tests/groups.rs: `guarded_tail` of groups.cl with the
// sub-group scans written out over local memory.
__kernel void local_guarded_tail(__global const int *flag, __global const int *in, __global int *out,
                                 __local uint *marks, uint tail) {
  uint lid = get_local_id(0);
  uint n = get_local_size(0);
  size_t base = get_group_id(0) * n;
  if (flag[0]) {
    if (lid < tail) out[base + lid] = in[base + lid];
    return;
  }
  int v = 0;
  if (tail > 0) {
    uint bucket = 4;
    if (lid < tail) {
      v = in[base + lid];
      bucket = (uint)v & 3u;
    }
    uint pos = 0;
    uint start = 0;
    for (uint b = 0; b < 4; ++b) {
      marks[lid] = bucket == b ? 1u : 0u;
      barrier(CLK_LOCAL_MEM_FENCE);
      uint before = 0;
      uint total = 0;
      for (uint j = 0; j < n; ++j) {
        before += j < lid ? marks[j] : 0u;
        total += marks[j];
      }
      if (bucket == b) pos = start + before;
      start += total;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid < tail) out[base + pos] = v;
  }
}
