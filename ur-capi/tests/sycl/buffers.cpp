// Buffers: written on one device, read on another (every ordered pair) (libsycl moves the
// data), sub-buffers, and handler::copy / fill, checked on the host.
#include <sycl/sycl.hpp>
#include <iostream>
#include <numeric>
#include <vector>

int main() {
  auto devs = sycl::device::get_devices();
  int failures = 0;
  const size_t n = 4096;
  for (size_t i = 0; i < devs.size(); i++)
  for (size_t j = 0; j < devs.size(); j++) {
    if (i == j) continue;
    const auto &a = devs[i];
    const auto &b = devs[j];
    std::vector<int> data(n);
    std::iota(data.begin(), data.end(), 0);
    std::vector<int> back(n, -1);
    {
      sycl::buffer<int> buf(data.data(), sycl::range<1>(n));
      sycl::queue qa(a), qb(b);
      qa.submit([&](sycl::handler &h) {
        sycl::accessor acc(buf, h, sycl::write_only);
        h.fill(acc, 5);
      });
      {
        sycl::buffer<int> sub(buf, sycl::id<1>(1024), sycl::range<1>(1024));
        qb.submit([&](sycl::handler &h) {
          sycl::accessor acc(sub, h, sycl::write_only);
          h.fill(acc, 9);
        });
      }
      qb.submit([&](sycl::handler &h) {
        sycl::accessor acc(buf, h, sycl::read_only);
        h.copy(acc, back.data());
      }).wait();
    }
    bool ok = true;
    for (size_t k = 0; k < n; k++) ok &= back[k] == ((k >= 1024 && k < 2048) ? 9 : 5);
    for (size_t k = 0; k < n; k++) ok &= data[k] == back[k];
    std::cout << a.get_info<sycl::info::device::name>() << " -> "
              << b.get_info<sycl::info::device::name>() << ": " << (ok ? "ok" : "FAILED") << "\n";
    failures += !ok;
  }
  return failures;
}
