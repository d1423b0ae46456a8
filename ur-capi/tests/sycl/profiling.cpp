// Event profiling on each device: a queue with enable_profiling, a copy's
// submit <= start <= end timestamps; a queue without it must refuse the
// query with a SYCL exception.
#include <sycl/sycl.hpp>
#include <iostream>
#include <vector>

int main() {
  int failures = 0;
  for (const auto &d : sycl::device::get_devices()) {
    std::cout << d.get_info<sycl::info::device::name>() << ": profiling: ";
    if (!d.has(sycl::aspect::queue_profiling)) {
      std::cout << "not supported\n";
      continue;
    }
    sycl::queue q(d, sycl::property::queue::enable_profiling{});
    const size_t n = 1 << 20;
    std::vector<int> in(n, 5), out(n, 0);
    bool ok = true;
    {
      sycl::buffer<int> buf{sycl::range<1>(n)};
      q.submit([&](sycl::handler &h) {
        sycl::accessor a(buf, h, sycl::write_only);
        h.copy(in.data(), a);
      });
      auto e = q.submit([&](sycl::handler &h) {
        sycl::accessor a(buf, h, sycl::read_only);
        h.copy(a, out.data());
      });
      e.wait();
      auto submit = e.get_profiling_info<sycl::info::event_profiling::command_submit>();
      auto start = e.get_profiling_info<sycl::info::event_profiling::command_start>();
      auto end = e.get_profiling_info<sycl::info::event_profiling::command_end>();
      ok &= submit <= start && start <= end && end > 0;
    }
    for (size_t k = 0; k < n; k++) ok &= out[k] == 5;
    sycl::queue plain(d);
    auto e = plain.submit([&](sycl::handler &h) { h.host_task([] {}); });
    e.wait();
    bool threw = false;
    try {
      (void)e.get_profiling_info<sycl::info::event_profiling::command_end>();
    } catch (const sycl::exception &) {
      threw = true;
    }
    ok &= threw;
    std::cout << (ok ? "ok" : "FAILED") << "\n";
    failures += !ok;
  }
  return failures;
}
