// Bad input on each device must raise a SYCL exception (or a null from
// malloc), never crash: a buffer larger than the device allows, a
// sub-buffer outside its parent, an over-sized USM allocation, a USM copy
// from a null pointer.
#include <sycl/sycl.hpp>
#include <iostream>
#include <vector>

template <class F> static bool throws(F f) {
  try {
    f();
  } catch (const sycl::exception &) {
    return true;
  }
  return false;
}

int main() {
  int failures = 0;
  for (const auto &d : sycl::device::get_devices()) {
    sycl::queue q(d);
    const auto name = d.get_info<sycl::info::device::name>();
    const auto max_alloc = d.get_info<sycl::info::device::max_mem_alloc_size>();
    bool huge = throws([&] {
      sycl::buffer<char> b{sycl::range<1>(size_t(max_alloc) * 64)};
      q.submit([&](sycl::handler &h) {
        sycl::accessor a(b, h, sycl::write_only);
        h.fill(a, char(1));
      }).wait_and_throw();
    });
    std::cout << name << ": huge buffer: " << (huge ? "ok" : "FAILED") << "\n";
    sycl::buffer<int> parent{sycl::range<1>(1024)};
    bool sub = throws([&] { sycl::buffer<int> s(parent, sycl::id<1>(512), sycl::range<1>(1024)); });
    std::cout << name << ": sub-buffer out of range: " << (sub ? "ok" : "FAILED") << "\n";
    failures += !huge + !sub;
    if (d.has(sycl::aspect::usm_device_allocations)) {
      void *p = sycl::malloc_device(size_t(max_alloc) * 64, q);
      std::cout << name << ": huge malloc_device: " << (p == nullptr ? "ok" : "FAILED") << "\n";
      failures += p != nullptr;
      if (p) sycl::free(p, q);
      int *dev = sycl::malloc_device<int>(16, q);
      bool null_copy = throws([&] { q.memcpy(dev, nullptr, 64).wait_and_throw(); });
      std::cout << name << ": memcpy from null: " << (null_copy ? "ok" : "FAILED") << "\n";
      failures += !null_copy;
      sycl::free(dev, q);
    }
  }
  return failures;
}
