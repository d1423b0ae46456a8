/* ur_rust_memory_connection.h: the memory-connection query of the
 * project's UR adapter library (libur_adapter_rust.so), a UR extension.
 *
 * Given two locations, each a (context, device) pair of this adapter,
 * answers whether memory allocated at the source can be used in place at
 * the destination (UNIFIED), copied there by the adapter's own copy
 * commands (MIGRATABLE), or must travel through host memory (NONE). The
 * answer is directional.
 *
 * The function is exported by the adapter library itself, not by the UR
 * loader: look it up with dlsym on the library named in
 * UR_ADAPTERS_FORCE_LOAD, e.g.
 *
 *   void *lib = dlopen("libur_adapter_rust.so", RTLD_NOW | RTLD_NOLOAD);
 *   urRustMemoryConnectionExp_t f =
 *       (urRustMemoryConnectionExp_t)dlsym(lib, "urRustMemoryConnectionExp");
 *   uint32_t c;
 *   if (f && f(ctxA, devA, ctxB, devB, &c) == UR_RESULT_SUCCESS) ...
 *
 * Handles must be this adapter's (as returned through the loader, which
 * does not wrap them). Returns UR_RESULT_ERROR_INVALID_CONTEXT or
 * UR_RESULT_ERROR_INVALID_DEVICE for handles that are not live objects of
 * the adapter, UR_RESULT_ERROR_INVALID_NULL_POINTER for a null pOut.
 */
#ifndef UR_RUST_MEMORY_CONNECTION_H
#define UR_RUST_MEMORY_CONNECTION_H

#include <stdint.h>
#include <unified-runtime/ur_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UR_RUST_MEMORY_CONNECTION_NONE 0u
#define UR_RUST_MEMORY_CONNECTION_MIGRATABLE 1u
#define UR_RUST_MEMORY_CONNECTION_UNIFIED 2u

ur_result_t urRustMemoryConnectionExp(ur_context_handle_t hSrcContext,
                                      ur_device_handle_t hSrcDevice,
                                      ur_context_handle_t hDstContext,
                                      ur_device_handle_t hDstDevice,
                                      uint32_t *pOut);

typedef ur_result_t (*urRustMemoryConnectionExp_t)(ur_context_handle_t,
                                                   ur_device_handle_t,
                                                   ur_context_handle_t,
                                                   ur_device_handle_t,
                                                   uint32_t *);

#ifdef __cplusplus
}
#endif

#endif
