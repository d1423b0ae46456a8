"""One side of `cargo xtask clients --bench` (and `cargo xtask bench`).

Run by xtask in a child process per side (the UR loader reads its adapter
choice once per process): `python clients_bench.py OP REPS`, with
ONEAPI_DEVICE_SELECTOR (and UR_ADAPTERS_FORCE_LOAD for our side) set.
Runs OP once to warm up, then REPS timed times, and prints one line:

    UR_CLIENTS_BENCH {"op": OP, "device": NAME, "ms": [t1, t2, ...]}

Operations (each timed as a whole, synchronised at its end):
- dpnp_add_16m_f32: c = a + b on 16M float32 dpnp arrays, then queue.wait()
  (on a CPU OpenCL device oneMKL's VM computes this on the host).
- kernel_submit_10k: 10,000 x dpnp.tensor.add(x, y, out=z) on 256 int32
  (one kernel launch each, no allocation), then queue.wait().
- sync_memcpy_4b_2k: 2,000 x SyclQueue.memcpy of 4 bytes between USM device
  allocations (each call waits for its copy).
- usm_alloc_free_1mib_1k: 1,000 x dpctl.memory.MemoryUSMDevice(1 MiB) made
  and freed.
"""

import json
import sys
import time

import dpctl
import dpctl.memory as dpmem


def dpnp_add_16m_f32(q):
    import dpnp

    n = 16 * 1024 * 1024
    a = dpnp.ones(n, dtype="f4", sycl_queue=q)
    b = dpnp.full(n, 2.0, dtype="f4", sycl_queue=q)

    def run():
        c = a + b
        q.wait()
        return c

    def check(c):
        assert float(c[n - 1]) == 3.0

    return run, check


def kernel_submit_10k(q):
    import dpnp.tensor as dpt

    x = dpt.arange(256, dtype="i4", sycl_queue=q)
    y = dpt.ones(256, dtype="i4", sycl_queue=q)
    z = dpt.empty(256, dtype="i4", sycl_queue=q)

    def run():
        for _ in range(10_000):
            dpt.add(x, y, out=z)
        q.wait()

    def check(_):
        assert int(dpt.asnumpy(z)[255]) == 256

    return run, check


def sync_memcpy_4b_2k(q):
    src = dpmem.MemoryUSMDevice(4, queue=q)
    dst = dpmem.MemoryUSMDevice(4, queue=q)
    src.copy_from_host(b"\x01\x02\x03\x04")

    def run():
        for _ in range(2_000):
            q.memcpy(dst, src, 4)

    def check(_):
        assert bytes(dst.copy_to_host()) == b"\x01\x02\x03\x04"

    return run, check


def usm_alloc_free_1mib_1k(q):
    def run():
        for _ in range(1_000):
            m = dpmem.MemoryUSMDevice(1 << 20, queue=q)
            del m

    return run, lambda _: None


OPS = {f.__name__: f for f in (dpnp_add_16m_f32, kernel_submit_10k, sync_memcpy_4b_2k, usm_alloc_free_1mib_1k)}


def main():
    op, reps = sys.argv[1], int(sys.argv[2])
    q = dpctl.SyclQueue()
    run, check = OPS[op](q)
    check(run())
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1e3)
    print("UR_CLIENTS_BENCH " + json.dumps({"op": op, "device": q.sycl_device.name, "ms": times}), flush=True)


if __name__ == "__main__":
    main()
