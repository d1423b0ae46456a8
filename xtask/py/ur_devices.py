"""Lists the devices the UR loader offers, in the order the SYCL runtime numbers them.

`cargo xtask clients` lists a side's devices with dpctl; when that process
dies (the SYCL runtime aborting on an adapter), it runs this instead: the
same order (adapters, their platforms, each platform's devices) read
through the loader's C API with ctypes, without the SYCL runtime. Prints
one line per device:

    UR_CLIENTS_DEVICE {"backend": "opencl", "platform": ..., "name": ...}
"""

import ctypes
import json
import os
import sys

UR_DEVICE_TYPE_ALL = 2
UR_PLATFORM_INFO_NAME = 1
UR_PLATFORM_INFO_BACKEND = 6
UR_DEVICE_INFO_NAME = 66
BACKENDS = {0: "unknown", 1: "level_zero", 2: "opencl", 3: "cuda", 4: "hip", 5: "native_cpu", 256: "offload"}


def main():
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sys.executable))), "lib", "libur_loader.so.0")
    ur = ctypes.CDLL(lib)
    handles = ctypes.c_void_p

    def check(what, rc):
        if rc != 0:
            raise SystemExit(f"{what} returned {rc}")

    def listed(fn, *args):
        n = ctypes.c_uint32(0)
        check(fn.__name__, fn(*args, 0, None, ctypes.byref(n)))
        out = (handles * n.value)()
        if n.value:
            check(fn.__name__, fn(*args, n.value, out, None))
        return list(out)

    def text(fn, h, prop):
        size = ctypes.c_size_t(0)
        check(fn.__name__, fn(handles(h), prop, 0, None, ctypes.byref(size)))
        buf = ctypes.create_string_buffer(size.value)
        check(fn.__name__, fn(handles(h), prop, size, buf, None))
        return buf.value.decode(errors="replace")

    check("urLoaderInit", ur.urLoaderInit(0, None))
    for adapter in listed(ur.urAdapterGet):
        for platform in listed(ur.urPlatformGet, handles(adapter)):
            backend = ctypes.c_uint32(0)
            check("urPlatformGetInfo", ur.urPlatformGetInfo(
                handles(platform), UR_PLATFORM_INFO_BACKEND, 4, ctypes.byref(backend), None))
            pname = text(ur.urPlatformGetInfo, platform, UR_PLATFORM_INFO_NAME)
            for device in listed(ur.urDeviceGet, handles(platform), UR_DEVICE_TYPE_ALL):
                print("UR_CLIENTS_DEVICE " + json.dumps({
                    "backend": BACKENDS.get(backend.value, str(backend.value)),
                    "platform": pname,
                    "name": text(ur.urDeviceGetInfo, device, UR_DEVICE_INFO_NAME),
                }), flush=True)


if __name__ == "__main__":
    main()
