// The conformance kernels in OpenCL C: `ur_conformance::kernels::OPENCL_C`
// is this file, and kernels.spv beside it is this file compiled to SPIR-V
// (the OpenCL adapter's and the C ABI's program tests). Regenerate it with
// the commands in README.md.
__kernel void fill_index(__global uint* out) {
    size_t i = get_global_id(0);
    out[i] = (uint)i;
}
__kernel void add_one(__global uint* buf) {
    size_t i = get_global_id(0);
    buf[i] += 1u;
}
__kernel void vec_add(__global const uint* a, __global const uint* b, __global uint* c) {
    size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
}
__kernel void add_scalar(__global uint* buf, uint k) {
    size_t i = get_global_id(0);
    buf[i] += k;
}
