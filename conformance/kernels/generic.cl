// Atomics and math functions that write through a pointer, on generic
// pointers (OpenCL C 2.0) to global, local and private memory, for
// adapters/opencl/tests/generic.rs. The functions taking the pointers are
// kept out of line, so that their pointers stay generic in the SPIR-V, as
// SYCL's do: the translator then calls the generic overloads
// (`_Z10atomic_addPU3AS4Vdd`, `_Z5frexpdPU3AS4i`, ...).
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable

// cl_ext_float_atomics' overloads, which clang-15 declares only for a
// target with the extension.
float __attribute__((overloadable)) atomic_fetch_add(volatile atomic_float *, float);
double __attribute__((overloadable)) atomic_fetch_add(volatile atomic_double *, double);
float __attribute__((overloadable)) atomic_fetch_max(volatile atomic_float *, float);
double __attribute__((overloadable)) atomic_fetch_min(volatile atomic_double *, double);

// Adds to each counter REPEAT times (so that work-groups running at once
// contend), and keeps the largest float and smallest double.
#define REPEAT 32
__attribute__((noinline)) void add_all(volatile atomic_int *i, volatile atomic_long *l, volatile atomic_float *f,
                                       volatile atomic_double *d, volatile atomic_float *fmax,
                                       volatile atomic_double *dmin, int x) {
  for (int r = 0; r < REPEAT; ++r) {
    atomic_fetch_add(i, x);
    atomic_fetch_add(l, (long)x << 32);
    atomic_fetch_add(f, (float)(x & 7));
    atomic_fetch_add(d, (double)x + 0.5);
  }
  atomic_fetch_max(fmax, (float)x * 0.25f);
  atomic_fetch_min(dmin, -(double)x);
}

// Row of each group in `generic_atomics`' outputs: row 0 holds the global
// counters, row 1 + g group g's local ones.
__kernel void generic_atomics(__global int *oi, __global long *ol, __global float *of, __global double *od) {
  __local atomic_int li;
  __local atomic_long ll;
  __local atomic_float lf, lfmax;
  __local atomic_double ld, ldmin;
  size_t g = get_group_id(0);
  if (get_local_id(0) == 0) {
    atomic_init(&li, 0);
    atomic_init(&ll, 0);
    atomic_init(&lf, 0.0f);
    atomic_init(&lfmax, 0.0f);
    atomic_init(&ld, 0.0);
    atomic_init(&ldmin, 0.0);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  int x = (int)get_global_id(0) + 1;
  add_all((volatile __global atomic_int *)oi, (volatile __global atomic_long *)ol, (volatile __global atomic_float *)of,
          (volatile __global atomic_double *)od, (volatile __global atomic_float *)(of + 1),
          (volatile __global atomic_double *)(od + 1), x);
  add_all(&li, &ll, &lf, &ld, &lfmax, &ldmin, x);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    oi[2 * (g + 1)] = atomic_load(&li);
    ol[2 * (g + 1)] = atomic_load(&ll);
    of[2 * (g + 1)] = atomic_load(&lf);
    of[2 * (g + 1) + 1] = atomic_load(&lfmax);
    od[2 * (g + 1)] = atomic_load(&ld);
    od[2 * (g + 1) + 1] = atomic_load(&ldmin);
  }
}

// Contention on one float and one double counter: every work-item adds 1
// to each CONTEND times, so that the work-groups the runtime runs at once
// (on several threads) race on them for milliseconds. Each add's previous
// value is kept (the largest seen), so the adds cannot be folded into one.
// A floating-point add that is not atomic loses some of the adds here.
#define CONTEND 8192
__attribute__((noinline)) float contend(volatile atomic_float *f, volatile atomic_double *d) {
  float seen = 0.0f;
  for (int r = 0; r < CONTEND; ++r) {
    seen = fmax(seen, atomic_fetch_add(f, 1.0f));
    seen = fmax(seen, (float)atomic_fetch_add(d, 1.0));
  }
  return seen;
}

// `f[0]` and `d[0]` count every add; `seen[i]` is the largest value work-item
// i found before one of its adds.
__kernel void generic_contention(__global float *f, __global double *d, __global float *seen) {
  seen[get_global_id(0)] = contend((volatile __global atomic_float *)f, (volatile __global atomic_double *)d);
}

// Claims both slots (which hold -1 until claimed) for `id`; answers 1 for
// the int slot won, 2 for the long one.
__attribute__((noinline)) int claim(volatile atomic_int *slot, volatile atomic_long *wide, int id) {
  int free = -1;
  long wide_free = -1;
  int won = atomic_compare_exchange_strong(slot, &free, id);
  won |= atomic_compare_exchange_strong(wide, &wide_free, ((long)id << 40) | id) << 1;
  return won;
}

// Every work-item claims the global slots (`si[0]`, `sl[0]`) and its
// group's local ones, whose winners go to `si[1 + g]`, `sl[1 + g]`; what
// it won goes to `won` (bits 0-1 global, 2-3 local).
__kernel void generic_cmpxchg(__global int *si, __global long *sl, __global int *won) {
  __local atomic_int ls;
  __local atomic_long lsl;
  size_t g = get_group_id(0);
  if (get_local_id(0) == 0) {
    atomic_init(&ls, -1);
    atomic_init(&lsl, -1);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  int id = (int)get_global_id(0);
  int w = claim((volatile __global atomic_int *)si, (volatile __global atomic_long *)sl, id);
  w |= claim(&ls, &lsl, id) << 2;
  won[id] = w;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    si[1 + g] = atomic_load(&ls);
    sl[1 + g] = atomic_load(&lsl);
  }
}

__attribute__((noinline)) double frexp_d(double x, int *e) { return frexp(x, e); }
__attribute__((noinline)) double modf_d(double x, double *i) { return modf(x, i); }
__attribute__((noinline)) float frexp_f(float x, int *e) { return frexp(x, e); }
__attribute__((noinline)) float modf_f(float x, float *i) { return modf(x, i); }

#define MATH_ROW 9
#define MAX_LOCAL 64
// frexp and modf of each x into global, local and private memory: row i of
// `o` holds the mantissas (global, local, private), the fractional parts,
// then the integral parts, row i of `e` the exponents. Work-groups of at
// most MAX_LOCAL items.
#define GENERIC_MATH(T, NAME, FREXP, MODF)                                                    \
  __kernel void NAME(__global const T *x, __global T *o, __global int *e) {                   \
    __local int le[MAX_LOCAL];                                                                \
    __local T li[MAX_LOCAL];                                                                  \
    size_t i = get_global_id(0), l = get_local_id(0);                                         \
    __global T *row = o + i * MATH_ROW;                                                       \
    int pe;                                                                                   \
    T pi;                                                                                     \
    row[0] = FREXP(x[i], &e[i * 3]);                                                          \
    row[1] = FREXP(x[i], &le[l]);                                                             \
    row[2] = FREXP(x[i], &pe);                                                                \
    row[3] = MODF(x[i], &row[6]);                                                             \
    row[4] = MODF(x[i], &li[l]);                                                              \
    row[5] = MODF(x[i], &pi);                                                                 \
    e[i * 3 + 1] = le[l];                                                                     \
    e[i * 3 + 2] = pe;                                                                        \
    row[7] = li[l];                                                                           \
    row[8] = pi;                                                                              \
  }
GENERIC_MATH(double, generic_math_double, frexp_d, modf_d)
GENERIC_MATH(float, generic_math_float, frexp_f, modf_f)
