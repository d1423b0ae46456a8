// Sub-buffers on each device (one queue): copies into three sub-buffers
// of one parent, the parent read back, checked on the host.
#include <sycl/sycl.hpp>
#include <iostream>
#include <numeric>
#include <vector>

int main() {
  int failures = 0;
  for (const auto &d : sycl::device::get_devices()) {
    sycl::queue q(d);
    const size_t n = 4096, part = 1024;
    std::vector<int> data(n, 0), back(n, -1);
    {
      sycl::buffer<int> buf(data.data(), sycl::range<1>(n));
      sycl::buffer<int> lo(buf, sycl::id<1>(0), sycl::range<1>(part));
      sycl::buffer<int> mid(buf, sycl::id<1>(part), sycl::range<1>(part));
      sycl::buffer<int> hi(buf, sycl::id<1>(2 * part), sycl::range<1>(2 * part));
      std::vector<int> ones(part, 1), twos(part, 2);
      q.submit([&](sycl::handler &h) {
        sycl::accessor a(lo, h, sycl::write_only);
        h.copy(ones.data(), a);
      });
      q.submit([&](sycl::handler &h) {
        sycl::accessor a(mid, h, sycl::write_only);
        h.copy(twos.data(), a);
      });
      std::vector<int> ramp(2 * part);
      std::iota(ramp.begin(), ramp.end(), 100);
      q.submit([&](sycl::handler &h) {
        sycl::accessor a(hi, h, sycl::write_only);
        h.copy(ramp.data(), a);
      }).wait();
      q.submit([&](sycl::handler &h) {
        sycl::accessor a(buf, h, sycl::read_only);
        h.copy(a, back.data());
      }).wait();
    }
    bool ok = true;
    for (size_t k = 0; k < n; k++) {
      int want = k < part ? 1 : k < 2 * part ? 2 : int(100 + k - 2 * part);
      ok &= back[k] == want && data[k] == want;
    }
    std::cout << d.get_info<sycl::info::device::name>() << ": sub-buffers: "
              << (ok ? "ok" : "FAILED") << "\n";
    failures += !ok;
  }
  return failures;
}
