// USM on each device: device/host/shared allocations, memcpy, fill,
// memset, checked on the host. Devices without USM say so.
#include <sycl/sycl.hpp>
#include <iostream>
#include <vector>

int main() {
  int failures = 0;
  for (const auto &d : sycl::device::get_devices()) {
    std::cout << d.get_info<sycl::info::device::name>() << ": ";
    if (!d.has(sycl::aspect::usm_device_allocations)) {
      std::cout << "no USM\n";
      continue;
    }
    sycl::queue q(d);
    const size_t n = 1 << 16;
    std::vector<int> in(n), out(n, -1);
    for (size_t i = 0; i < n; i++) in[i] = int(i * 7);
    int *dev = sycl::malloc_device<int>(n, q);
    int *host = sycl::malloc_host<int>(n, q);
    q.memcpy(dev, in.data(), n * sizeof(int)).wait();
    q.memcpy(host, dev, n * sizeof(int)).wait();
    bool ok = std::equal(in.begin(), in.end(), host);
    q.fill(dev, 42, n / 2).wait();
    q.memset(dev + n / 2, 0x01, (n / 2) * sizeof(int)).wait();
    q.memcpy(out.data(), dev, n * sizeof(int)).wait();
    for (size_t i = 0; i < n; i++) ok &= out[i] == (i < n / 2 ? 42 : 0x01010101);
    if (d.has(sycl::aspect::usm_shared_allocations)) {
      int *shared = sycl::malloc_shared<int>(n, q);
      q.memcpy(shared, in.data(), n * sizeof(int)).wait();
      ok &= shared[n - 1] == int((n - 1) * 7);
      sycl::free(shared, q);
    }
    sycl::free(dev, q);
    sycl::free(host, q);
    std::cout << (ok ? "ok" : "FAILED") << "\n";
    failures += !ok;
  }
  return failures;
}
