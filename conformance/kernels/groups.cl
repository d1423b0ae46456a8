// Work-group collectives and sub-group functions (OpenCL C 2.0 with
// cl_khr_subgroups), for adapters/opencl/tests/groups.rs. Each work-item
// writes what each function answered into its own row of `out`.
#pragma OPENCL EXTENSION cl_khr_subgroups : enable

#define INT_ROW 10
__kernel void group_int(__global const int *in, __global int *out) {
  size_t g = get_global_id(0);
  int x = in[g];
  __global int *o = out + g * INT_ROW;
  o[0] = work_group_reduce_add(x);
  o[1] = work_group_reduce_min(x);
  o[2] = work_group_reduce_max(x);
  o[3] = work_group_scan_inclusive_add(x);
  o[4] = work_group_scan_exclusive_add(x);
  o[5] = work_group_scan_inclusive_max(x);
  o[6] = work_group_broadcast(x, 3);
  o[7] = work_group_any(x == 5);
  o[8] = work_group_all(x >= 0);
  o[9] = work_group_scan_exclusive_min(x);
}

#define WIDE_ROW 4
__kernel void group_wide(__global const double *d, __global const long *l, __global double *od, __global long *ol) {
  size_t g = get_global_id(0);
  od[g * WIDE_ROW + 0] = work_group_reduce_add(d[g]);
  od[g * WIDE_ROW + 1] = work_group_reduce_max(d[g]);
  od[g * WIDE_ROW + 2] = work_group_scan_inclusive_add(d[g]);
  od[g * WIDE_ROW + 3] = work_group_broadcast(d[g], get_local_size(0) - 1);
  ol[g * WIDE_ROW + 0] = work_group_reduce_add(l[g]);
  ol[g * WIDE_ROW + 1] = work_group_reduce_min(l[g]);
  ol[g * WIDE_ROW + 2] = work_group_scan_exclusive_add(l[g]);
  ol[g * WIDE_ROW + 3] = work_group_broadcast(l[g], 0);
}

#define SUB_ROW 8
__kernel void sub_groups(__global const int *in, __global uint *out) {
  size_t g = get_global_id(0);
  __global uint *o = out + g * SUB_ROW;
  o[0] = get_sub_group_size();
  o[1] = get_max_sub_group_size();
  o[2] = get_num_sub_groups();
  o[3] = get_sub_group_id();
  o[4] = get_sub_group_local_id();
  o[5] = sub_group_reduce_add(in[g]);
  o[6] = sub_group_broadcast(in[g], 0);
  o[7] = sub_group_any(in[g] == 5);
}

// A sub-group barrier that only some sub-groups of a work-group reach, as
// in SYCL's sub-group loads and stores: valid, each sub-group is uniform.
__kernel void divergent_sub_group_barrier(__global const int *in, __global int *out) {
  size_t g = get_global_id(0);
  if (get_sub_group_id() % 2 == 0) {
    out[g] = in[g];
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
    out[g] += 1;
  } else {
    out[g] = in[g] - 1;
  }
}

// Sub-group functions in groups of one or two dimensions: each work-item
// writes, at its global linear id, where it is in its sub-group and what
// the functions answered, for the test to check against the sub-groups
// the runtime reports.
#define ROWS_ROW 8
__kernel void sub_group_rows(__global const int *in, __global int *out) {
  size_t g = get_global_id(1) * get_global_size(0) + get_global_id(0);
  int x = in[g];
  __global int *o = out + g * ROWS_ROW;
  o[0] = get_sub_group_id();
  o[1] = get_sub_group_local_id();
  o[2] = get_sub_group_size();
  o[3] = sub_group_reduce_add(x);
  o[4] = sub_group_scan_inclusive_add(x);
  o[5] = sub_group_scan_exclusive_max(x);
  o[6] = sub_group_broadcast(x, 1);
  o[7] = sub_group_reduce_min(x);
}

// dpnp's radix sort reorder, reduced: unless flag[0] says to copy (and
// return early), the work-items of each group below `tail` order their
// values by the low two bits through sub-group scans, each sub-group its
// own, and only they store; sizes[group] is the sub-group size. The early
// return shares the kernel's exit with the guarded store after the scans
// (on PoCL 3.1 that needs each barrier region's own exit tail,
// adapters/opencl/src/spirv/tails.rs).
__kernel void guarded_tail(__global const int *flag, __global const int *in, __global int *out,
                           __global uint *sizes, uint tail) {
  uint lid = get_local_id(0);
  size_t base = get_group_id(0) * get_local_size(0);
  if (lid == 0) sizes[get_group_id(0)] = get_max_sub_group_size();
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
      uint mine = bucket == b ? 1u : 0u;
      uint before = sub_group_scan_exclusive_add(mine);
      uint total = sub_group_broadcast(before + mine, get_sub_group_size() - 1);
      if (mine) pos = start + before;
      start += total;
    }
    if (lid < tail) out[base + get_sub_group_id() * get_max_sub_group_size() + pos] = v;
  }
}
