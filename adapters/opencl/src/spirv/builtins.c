/*
 * OpenCL C 2.0 work-group collectives and sub-group functions for OpenCL
 * devices whose kernel library has neither (PoCL 3.1: OpenCL C 1.2, no
 * cl_khr_subgroups), linked into the SPIR bitcode the SPIR-V translator
 * makes for them (see builtins.rs).
 *
 * Written in C, not OpenCL C, for one reason: the work-group functions
 * share a scratch array in local memory, and OpenCL C allows local
 * variables only inside kernels. C for the `spir64` target gives the same
 * code (functions with the `spir_func` calling convention, Itanium-mangled
 * overloads through `overloadable`), and a program-scope array in address
 * space 3, which the runtime turns into kernel-local memory once these
 * functions are inlined into a kernel.
 *
 * Semantics:
 * - A sub-group is one row of the work-group (dimension 0), as in PoCL 4:
 *   the work-items sharing their local ids in dimensions 1 and 2, as many
 *   as the group's local size in dimension 0. In a one-dimensional group
 *   (what SYCL programs launch nearly always) the sub-group is the whole
 *   group, so a sub-group barrier can be the runtime's work-group barrier
 *   and every sub-group call that SYCL allows reaches it in every
 *   work-item of the group. Sub-group functions exchange operands through
 *   the scratch arrays like the work-group collectives below, the row's
 *   first work-item combining the row's slots. Groups of more dimensions
 *   have one sub-group per row; their sub-group functions and barriers
 *   must then be reached by every row of the group (as for a work-group
 *   function), a sub-group call under a condition that differs between
 *   rows is not supported. The sizes the device lists and a kernel's
 *   largest sub-group size are in builtins.rs.
 * - Work-group collectives: every work-item writes its operand into its
 *   slot of the scratch array, work-item 0 combines the slots in local-id
 *   order, and every work-item reads its result; barriers separate the
 *   steps, and a last barrier lets the next collective reuse the array.
 *   As the OpenCL C specification requires, every work-item of the group
 *   must reach the call. The runtime runs a group's work-items on one
 *   thread, so one work-item combining serially costs what the runtime
 *   would.
 *
 * UR_WG_MAX (given at compile time) is the largest work-group size of the
 * devices the bitcode is linked for.
 */

#ifndef UR_WG_MAX
#error "UR_WG_MAX must be defined: the largest work-group size"
#endif

#define OL __attribute__((overloadable))
/* The builtins: convergent, because they hold barriers and the optimiser
 * must not make their calls depend on more control flow than they do
 * (OpenCL C makes every function convergent; C does not); always inlined,
 * because PoCL 3.1 gives a kernel its own copy of a local array only where
 * the kernel itself uses it (see builtins.rs). */
#define CV __attribute__((overloadable, convergent, always_inline))
#define LOCAL __attribute__((address_space(3)))

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef unsigned long size_t;

/* The runtime's own builtins, by their OpenCL C names. */
size_t OL get_local_id(uint);
size_t OL get_local_size(uint);
size_t OL get_enqueued_local_size(uint);
void CV barrier(uint);
float OL fmin(float, float);
float OL fmax(float, float);
double OL fmin(double, double);
double OL fmax(double, double);

/* OpenCL's memory_scope enum, for the sub-group barrier that takes one. */
typedef enum memory_scope {
  memory_scope_work_item = 0,
  memory_scope_sub_group = 4,
  memory_scope_work_group = 1,
  memory_scope_device = 2,
  memory_scope_all_svm_devices = 3,
} memory_scope;

#define CLK_LOCAL_MEM_FENCE 1u

/* Scratch arrays in local memory, one per type: a slot per work-item and
 * one for a result (at index "number of work-items"). Without an
 * initializer: local memory has none.
 *
 * Every index into them is a run-time value: PoCL 3.1's kernel compiler
 * crashes (in LLVM's inliner) on a constant-expression address into a
 * program-scope local array used outside a kernel, which a constant index
 * (scratch[0]) compiles to. adapters/opencl/src/spirv/builtins.rs checks
 * the compiled library has none. */
#define SCRATCH(T, S) static LOCAL __attribute__((loader_uninitialized)) T scratch_##S[UR_WG_MAX + 1];
SCRATCH(int, i)
SCRATCH(uint, j)
SCRATCH(long, l)
SCRATCH(ulong, m)
SCRATCH(float, f)
SCRATCH(double, d)

static size_t local_linear_id(void) {
  return (get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0) + get_local_id(0);
}

static size_t group_items(void) {
  return get_local_size(0) * get_local_size(1) * get_local_size(2);
}

/* ---- sub-groups: the rows of the work-group ------------------------------ */

/* A sub-group is one row of the work-group: the work-items that share
 * their local ids in dimensions 1 and 2. Its size is the group's local
 * size in dimension 0, its local id a work-item's local id in dimension 0,
 * and in a one-dimensional group it is the whole group. */
static size_t row_base(void) { return local_linear_id() - get_local_id(0); }

uint OL get_sub_group_size(void) { return (uint)get_local_size(0); }
uint OL get_max_sub_group_size(void) { return (uint)get_enqueued_local_size(0); }
uint OL get_num_sub_groups(void) { return (uint)(get_local_size(1) * get_local_size(2)); }
uint OL get_enqueued_num_sub_groups(void) {
  return (uint)(get_enqueued_local_size(1) * get_enqueued_local_size(2));
}
uint OL get_sub_group_id(void) { return (uint)(get_local_id(2) * get_local_size(1) + get_local_id(1)); }
uint OL get_sub_group_local_id(void) { return (uint)get_local_id(0); }

/* OpenCL C 1.2's memory fences, which the translator makes of SPIR-V
 * memory barriers and PoCL 3.1's kernel library lacks: every fence orders
 * all of the work-item's memory operations. */
void OL mem_fence(uint flags) { (void)flags; __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void OL read_mem_fence(uint flags) { (void)flags; __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void OL write_mem_fence(uint flags) { (void)flags; __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* A sub-group barrier is a work-group barrier: the runtime has no other,
 * and in a one-dimensional group the two are the same. In groups of more
 * dimensions every row of the group must reach it (the translator turns
 * SPIR-V's sub-group control barriers into the same `barrier()`). */
void CV sub_group_barrier(uint flags) { barrier(flags | CLK_LOCAL_MEM_FENCE); }
void CV sub_group_barrier(uint flags, memory_scope scope) {
  (void)scope;
  barrier(flags | CLK_LOCAL_MEM_FENCE);
}

int CV sub_group_elect(void) { return get_local_id(0) == 0; }
int CV sub_group_all(int p);
int CV sub_group_any(int p);

/* Identities of the operations, per type. */
#define ID_add(T, MIN, MAX) ((T)0)
#define ID_mul(T, MIN, MAX) ((T)1)
#define ID_min(T, MIN, MAX) (MAX)
#define ID_max(T, MIN, MAX) (MIN)
#define ID_and(T, MIN, MAX) ((T)~(T)0)
#define ID_or(T, MIN, MAX) ((T)0)
#define ID_xor(T, MIN, MAX) ((T)0)
#define ID_logical_and(T, MIN, MAX) ((T)1)
#define ID_logical_or(T, MIN, MAX) ((T)0)
#define ID_logical_xor(T, MIN, MAX) ((T)0)

/* Combining two operands. */
#define OP_add(a, b) ((a) + (b))
#define OP_mul(a, b) ((a) * (b))
#define OP_min(a, b) ((b) < (a) ? (b) : (a))
#define OP_max(a, b) ((a) < (b) ? (b) : (a))
#define OP_fmin(a, b) fmin((a), (b))
#define OP_fmax(a, b) fmax((a), (b))
#define OP_and(a, b) ((a) & (b))
#define OP_or(a, b) ((a) | (b))
#define OP_xor(a, b) ((a) ^ (b))
#define OP_logical_and(a, b) ((a) && (b))
#define OP_logical_or(a, b) ((a) || (b))
#define OP_logical_xor(a, b) (!(a) != !(b))

/* The frame of every group function over the scratch array S of type T:
 * each work-item writes its operand x into its slot, the first work-item
 * of the n slots from `base` (the work-group's, or the row's for a
 * sub-group function) runs STEP over them, and each work-item answers the
 * slot RESULT. Barriers separate the steps, and a last one lets the next
 * call reuse the array; every work-item of the group must reach the call
 * (as the OpenCL C specification requires of work-group functions; for
 * sub-group functions, the non-uniform ones included, a call that only
 * part of a row makes is not supported). */
#define EXCHANGE(T, S, x, BASE, N, SLOT, STEP, RESULT)                             \
  size_t id = local_linear_id(), base = (BASE), n = (N), slot = (SLOT);            \
  (void)n;                                                                         \
  (void)slot;                                                                      \
  scratch_##S[id] = (x);                                                           \
  barrier(CLK_LOCAL_MEM_FENCE);                                                    \
  if (id == base) STEP                                                             \
  barrier(CLK_LOCAL_MEM_FENCE);                                                    \
  T r = scratch_##S[RESULT];                                                       \
  barrier(CLK_LOCAL_MEM_FENCE);                                                    \
  return r;

/* A sub-group function's exchange: over the caller's row. */
#define ROW_EXCHANGE(T, S, x, STEP, RESULT)                                        \
  EXCHANGE(T, S, x, id - get_local_id(0), get_local_size(0), base, STEP, RESULT)

/* The slot of the row's work-item `from`, or the caller's own where there
 * is no such work-item. */
#define ROW_SLOT(from) ((from) < n ? base + (from) : id)

/* The reduction and the scans of one type (scratch array S) and operation
 * over the slots an exchange FRAME covers (ROW_EXCHANGE for the sub-group
 * functions, COLLECTIVE for the work-group ones), named PREFIX_reduce_NAME
 * and so on. The reduction leaves its result in the frame's result slot:
 * the row's first, or the group's extra one (never a constant index, see
 * the scratch arrays). */
#define GROUP_SCANS(T, S, PREFIX, FRAME, NAME, COMBINE, MIN, MAX)                  \
  T CV PREFIX##_reduce_##NAME(T x) {                                               \
    FRAME(T, S, x, {                                                               \
      T acc = ID_##NAME(T, MIN, MAX);                                              \
      for (size_t i = 0; i < n; ++i) acc = COMBINE(acc, scratch_##S[base + i]);    \
      scratch_##S[slot] = acc;                                                     \
    }, slot)                                                                       \
  }                                                                                \
  T CV PREFIX##_scan_inclusive_##NAME(T x) {                                       \
    FRAME(T, S, x, {                                                               \
      T acc = ID_##NAME(T, MIN, MAX);                                              \
      for (size_t i = 0; i < n; ++i) {                                             \
        acc = COMBINE(acc, scratch_##S[base + i]);                                 \
        scratch_##S[base + i] = acc;                                               \
      }                                                                            \
    }, id)                                                                         \
  }                                                                                \
  T CV PREFIX##_scan_exclusive_##NAME(T x) {                                       \
    FRAME(T, S, x, {                                                               \
      T acc = ID_##NAME(T, MIN, MAX);                                              \
      for (size_t i = 0; i < n; ++i) {                                             \
        T v = scratch_##S[base + i];                                               \
        scratch_##S[base + i] = acc;                                               \
        acc = COMBINE(acc, v);                                                     \
      }                                                                            \
    }, id)                                                                         \
  }

/* The sub-group functions of one type (scratch array S) and operation. */
#define SUB_GROUP_OP(T, S, NAME, COMBINE, MIN, MAX)                                \
  GROUP_SCANS(T, S, sub_group, ROW_EXCHANGE, NAME, COMBINE, MIN, MAX)              \
  T CV sub_group_non_uniform_reduce_##NAME(T x) { return sub_group_reduce_##NAME(x); } \
  T CV sub_group_non_uniform_scan_inclusive_##NAME(T x) {                          \
    return sub_group_scan_inclusive_##NAME(x);                                     \
  }                                                                                \
  T CV sub_group_non_uniform_scan_exclusive_##NAME(T x) {                          \
    return sub_group_scan_exclusive_##NAME(x);                                     \
  }                                                                                \
  T CV sub_group_clustered_reduce_##NAME(T x, uint cluster) {                      \
    ROW_EXCHANGE(T, S, x, {                                                        \
      for (size_t c = 0; c < n; c += cluster) {                                    \
        T acc = ID_##NAME(T, MIN, MAX);                                            \
        size_t end = c + cluster < n ? c + cluster : n;                            \
        for (size_t i = c; i < end; ++i) acc = COMBINE(acc, scratch_##S[base + i]); \
        for (size_t i = c; i < end; ++i) scratch_##S[base + i] = acc;              \
      }                                                                            \
    }, id)                                                                         \
  }

/* Sub-group data movement for one type T, exchanged as type E through the
 * scratch array S (the narrow integer types through int's). */
#define SUB_GROUP_MOVES(T, E, S)                                                   \
  static __attribute__((convergent, always_inline))                                \
  T row_read_##T(T x, size_t from) {                                               \
    ROW_EXCHANGE(T, S, (E)x, {}, ROW_SLOT(from))                                   \
  }                                                                                \
  T CV sub_group_broadcast(T x, uint i) { return row_read_##T(x, i); }             \
  T CV sub_group_non_uniform_broadcast(T x, uint i) { return row_read_##T(x, i); } \
  T CV sub_group_broadcast_first(T x) { return row_read_##T(x, 0); }               \
  int CV sub_group_non_uniform_all_equal(T x) { return sub_group_all(row_read_##T(x, 0) == x); } \
  T CV sub_group_shuffle(T x, uint i) { return row_read_##T(x, i); }               \
  T CV sub_group_shuffle_xor(T x, uint mask) {                                     \
    return row_read_##T(x, get_local_id(0) ^ mask);                                \
  }                                                                                \
  T CV sub_group_shuffle_up(T x, uint delta) {                                     \
    size_t lid = get_local_id(0);                                                  \
    return row_read_##T(x, lid >= delta ? lid - delta : (size_t)-1);               \
  }                                                                                \
  T CV sub_group_shuffle_down(T x, uint delta) {                                   \
    return row_read_##T(x, get_local_id(0) + delta);                               \
  }                                                                                \
  T CV intel_sub_group_shuffle(T x, uint i) { return row_read_##T(x, i); }         \
  T CV intel_sub_group_shuffle_xor(T x, uint mask) {                               \
    return row_read_##T(x, get_local_id(0) ^ mask);                                \
  }                                                                                \
  T CV intel_sub_group_shuffle_down(T cur, T next, uint delta) {                   \
    size_t at = get_local_id(0) + delta, n = get_local_size(0);                    \
    T c = row_read_##T(cur, at);                                                   \
    T x = row_read_##T(next, at - n);                                              \
    return at < n ? c : x;                                                         \
  }                                                                                \
  T CV intel_sub_group_shuffle_up(T prev, T cur, uint delta) {                     \
    size_t lid = get_local_id(0), n = get_local_size(0);                           \
    T c = row_read_##T(cur, lid >= delta ? lid - delta : (size_t)-1);              \
    T p = row_read_##T(prev, lid >= delta ? (size_t)-1 : n + lid - delta);         \
    return lid >= delta ? c : p;                                                   \
  }

/* ---- work-group collectives ---------------------------------------------- */

/* A work-group collective's exchange: over the whole group. */
#define COLLECTIVE(T, S, x, STEP, RESULT)                                          \
  EXCHANGE(T, S, x, 0, group_items(), n, STEP, RESULT)

/* The work-group functions of one type (scratch array S) and operation. */
#define WORK_GROUP_OP(T, S, NAME, COMBINE, MIN, MAX)                               \
  GROUP_SCANS(T, S, work_group, COLLECTIVE, NAME, COMBINE, MIN, MAX)

/* Broadcasts from the work-item with the given local id, 1 to 3 dimensions. */
#define WORK_GROUP_BROADCAST(T, S)                                                 \
  static __attribute__((convergent, always_inline))                                \
  T broadcast_##S(T a, size_t from) {                                              \
    size_t n = group_items();                                                      \
    if (local_linear_id() == from) scratch_##S[n] = a;                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                  \
    T r = scratch_##S[n];                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                                  \
    return r;                                                                      \
  }                                                                                \
  T CV work_group_broadcast(T a, size_t x) { return broadcast_##S(a, x); }         \
  T CV work_group_broadcast(T a, size_t x, size_t y) {                             \
    return broadcast_##S(a, y * get_local_size(0) + x);                            \
  }                                                                                \
  T CV work_group_broadcast(T a, size_t x, size_t y, size_t z) {                   \
    return broadcast_##S(a, (z * get_local_size(1) + y) * get_local_size(0) + x);  \
  }

/* The work-group and sub-group functions of one type and operation. */
#define GROUP_OP(T, S, NAME, COMBINE, MIN, MAX)                                    \
  WORK_GROUP_OP(T, S, NAME, COMBINE, MIN, MAX)                                     \
  SUB_GROUP_OP(T, S, NAME, COMBINE, MIN, MAX)

/* Everything for an integer type. */
#define INTEGER(T, S, MIN, MAX)                                                    \
  GROUP_OP(T, S, add, OP_add, MIN, MAX)                                            \
  GROUP_OP(T, S, mul, OP_mul, MIN, MAX)                                            \
  GROUP_OP(T, S, min, OP_min, MIN, MAX)                                            \
  GROUP_OP(T, S, max, OP_max, MIN, MAX)                                            \
  GROUP_OP(T, S, and, OP_and, MIN, MAX)                                            \
  GROUP_OP(T, S, or, OP_or, MIN, MAX)                                              \
  GROUP_OP(T, S, xor, OP_xor, MIN, MAX)                                            \
  WORK_GROUP_BROADCAST(T, S)                                                       \
  SUB_GROUP_MOVES(T, T, S)

/* Everything for a floating-point type (min and max as fmin and fmax). */
#define FLOATING(T, S, INF)                                                        \
  GROUP_OP(T, S, add, OP_add, -INF, INF)                                           \
  GROUP_OP(T, S, mul, OP_mul, -INF, INF)                                           \
  GROUP_OP(T, S, min, OP_fmin, -INF, INF)                                          \
  GROUP_OP(T, S, max, OP_fmax, -INF, INF)                                          \
  WORK_GROUP_BROADCAST(T, S)                                                       \
  SUB_GROUP_MOVES(T, T, S)

INTEGER(int, i, (-2147483647 - 1), 2147483647)
INTEGER(uint, j, 0u, 4294967295u)
INTEGER(long, l, (-9223372036854775807L - 1), 9223372036854775807L)
INTEGER(ulong, m, 0ul, 18446744073709551615ul)
FLOATING(float, f, __builtin_inff())
FLOATING(double, d, __builtin_inf())

/* Logical operations on predicates, and all / any. */
GROUP_OP(int, i, logical_and, OP_logical_and, 0, 0)
GROUP_OP(int, i, logical_or, OP_logical_or, 0, 0)
GROUP_OP(int, i, logical_xor, OP_logical_xor, 0, 0)
int CV work_group_all(int p) { return work_group_reduce_logical_and(p != 0); }
int CV work_group_any(int p) { return work_group_reduce_logical_or(p != 0); }
int CV sub_group_all(int p) { return sub_group_reduce_logical_and(p != 0); }
int CV sub_group_any(int p) { return sub_group_reduce_logical_or(p != 0); }
int CV sub_group_non_uniform_all(int p) { return sub_group_all(p); }
int CV sub_group_non_uniform_any(int p) { return sub_group_any(p); }

/* Sub-group data movement of the narrower integer types. */
SUB_GROUP_MOVES(char, int, i)
SUB_GROUP_MOVES(uchar, uint, j)
SUB_GROUP_MOVES(short, int, i)
SUB_GROUP_MOVES(ushort, uint, j)


/* ---- generic address space ----------------------------------------------- */

/* OpenCL C 2.0's generic-address-space overloads of the atomics and of the
 * math functions that write through a pointer, which the translator emits
 * for SYCL's generic pointers (`_Z10atomic_addPU3AS4Vdd`,
 * `_Z8atom_addPU3AS4Vll`, `_Z5frexpdPU3AS4i`) and an OpenCL C 1.2 kernel
 * library lacks.
 *
 * The devices that get these builtins run kernels on the host's CPU
 * (PoCL's pthread and basic devices): global, local and private memory
 * are one address space there, so a generic pointer, whatever it points
 * to, is a valid global one. Each overload casts it so and calls OpenCL C
 * 1.2's global overload: the core 32-bit atomics (`atomic_*`),
 * cl_khr_int64's 64-bit ones (`atom_*`), the core math functions. The
 * floating-point atomics OpenCL C 1.2 lacks (add, min and max of float and
 * double, exchange of double) loop on a compare-exchange of the value's
 * bits, as OpenCL C 2.0 runtimes do.
 *
 * Always inlined, as the group functions are: compiled with -fno-builtin,
 * a function here carries "no-builtins", which LLVM's inliner otherwise
 * refuses to inline into a kernel without it (they would stay calls). */
#define GAS __attribute__((overloadable, always_inline))
#define GENERIC __attribute__((address_space(4)))
#define GLOBAL __attribute__((address_space(1)))

/* The runtime's global overloads, and one generic overload forwarding to
 * each: NAME on T with 0, 1 or 2 operands. */
#define FORWARD_0(T, NAME)                                                         \
  T OL NAME(volatile GLOBAL T *);                                                  \
  T GAS NAME(volatile GENERIC T *p) { return NAME((volatile GLOBAL T *)p); }
#define FORWARD_1(T, NAME)                                                         \
  T OL NAME(volatile GLOBAL T *, T);                                               \
  T GAS NAME(volatile GENERIC T *p, T v) { return NAME((volatile GLOBAL T *)p, v); }
#define FORWARD_2(T, NAME)                                                         \
  T OL NAME(volatile GLOBAL T *, T, T);                                            \
  T GAS NAME(volatile GENERIC T *p, T a, T b) { return NAME((volatile GLOBAL T *)p, a, b); }

/* Every integer atomic of one prefix (`atomic` for 32 bits, `atom` for 64). */
#define INTEGER_ATOMICS(T, P)                                                      \
  FORWARD_1(T, P##_add) FORWARD_1(T, P##_sub) FORWARD_1(T, P##_xchg)               \
  FORWARD_1(T, P##_min) FORWARD_1(T, P##_max) FORWARD_1(T, P##_and)                \
  FORWARD_1(T, P##_or) FORWARD_1(T, P##_xor) FORWARD_0(T, P##_inc)                 \
  FORWARD_0(T, P##_dec) FORWARD_2(T, P##_cmpxchg)
INTEGER_ATOMICS(int, atomic)
INTEGER_ATOMICS(uint, atomic)
INTEGER_ATOMICS(long, atom)
INTEGER_ATOMICS(ulong, atom)
FORWARD_1(float, atomic_xchg)

/* A floating-point read-modify-write: NAME(p, v) stores COMBINE(old, v)
 * where old is what p held, and answers old. The bits (of the integer type
 * I of the same width) are compared, so a NaN does not loop forever. */
#define FLOAT_RMW(T, I, CMPXCHG, NAME, COMBINE)                                    \
  T GAS NAME(volatile GENERIC T *p, T v) {                                         \
    volatile GLOBAL I *bits = (volatile GLOBAL I *)p;                              \
    union { T f; I i; } old, next;                                                 \
    I seen = *bits;                                                                \
    do {                                                                           \
      old.i = seen;                                                                \
      next.f = COMBINE(old.f, v);                                                  \
      seen = CMPXCHG(bits, old.i, next.i);                                         \
    } while (seen != old.i);                                                       \
    return old.f;                                                                  \
  }
#define OP_second(a, b) (b)
FLOAT_RMW(float, int, atomic_cmpxchg, atomic_add, OP_add)
FLOAT_RMW(float, int, atomic_cmpxchg, atomic_min, OP_fmin)
FLOAT_RMW(float, int, atomic_cmpxchg, atomic_max, OP_fmax)
FLOAT_RMW(double, long, atom_cmpxchg, atomic_add, OP_add)
FLOAT_RMW(double, long, atom_cmpxchg, atomic_min, OP_fmin)
FLOAT_RMW(double, long, atom_cmpxchg, atomic_max, OP_fmax)
FLOAT_RMW(double, long, atom_cmpxchg, atomic_xchg, OP_second)

/* The math functions that write a second result through a pointer. */
#define MATH_PTR(T)                                                                \
  T OL frexp(T, GLOBAL int *);                                                     \
  T GAS frexp(T x, GENERIC int *e) { return frexp(x, (GLOBAL int *)e); }           \
  T OL lgamma_r(T, GLOBAL int *);                                                  \
  T GAS lgamma_r(T x, GENERIC int *s) { return lgamma_r(x, (GLOBAL int *)s); }     \
  T OL remquo(T, T, GLOBAL int *);                                                 \
  T GAS remquo(T x, T y, GENERIC int *q) { return remquo(x, y, (GLOBAL int *)q); } \
  T OL modf(T, GLOBAL T *);                                                        \
  T GAS modf(T x, GENERIC T *i) { return modf(x, (GLOBAL T *)i); }                 \
  T OL fract(T, GLOBAL T *);                                                       \
  T GAS fract(T x, GENERIC T *i) { return fract(x, (GLOBAL T *)i); }               \
  T OL sincos(T, GLOBAL T *);                                                      \
  T GAS sincos(T x, GENERIC T *c) { return sincos(x, (GLOBAL T *)c); }
MATH_PTR(float)
MATH_PTR(double)
