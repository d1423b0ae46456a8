// Host tasks and event dependencies on each device: a fill, a host task
// that depends on it and changes the data, a copy that depends on the host
// task, across two queues of one context; checked on the host.
#include <sycl/sycl.hpp>
#include <iostream>
#include <vector>

int main() {
  int failures = 0;
  for (const auto &d : sycl::device::get_devices()) {
    sycl::context ctx(d);
    sycl::queue q1(ctx, d), q2(ctx, d);
    const size_t n = 2048;
    std::vector<int> mid(n, 0), back(n, -1);
    bool ok = true;
    {
      sycl::buffer<int> buf{sycl::range<1>(n)};
      auto e1 = q1.submit([&](sycl::handler &h) {
        sycl::accessor a(buf, h, sycl::write_only);
        h.fill(a, 3);
      });
      auto e2 = q1.submit([&](sycl::handler &h) {
        sycl::accessor a(buf, h, sycl::read_only);
        h.copy(a, mid.data());
      });
      auto e3 = q2.submit([&](sycl::handler &h) {
        h.depends_on(e2);
        h.host_task([&] {
          for (auto &v : mid) v = v * 10 + 1;
        });
      });
      auto e4 = q2.submit([&](sycl::handler &h) {
        h.depends_on(e3);
        sycl::accessor a(buf, h, sycl::write_only);
        h.copy(mid.data(), a);
      });
      auto e5 = q1.submit([&](sycl::handler &h) {
        h.depends_on(e4);
        sycl::accessor a(buf, h, sycl::read_only);
        h.copy(a, back.data());
      });
      e5.wait();
      ok &= e1.get_info<sycl::info::event::command_execution_status>() ==
            sycl::info::event_command_status::complete;
      ok &= e4.get_info<sycl::info::event::command_execution_status>() ==
            sycl::info::event_command_status::complete;
    }
    for (size_t k = 0; k < n; k++) ok &= back[k] == 31 && mid[k] == 31;
    std::cout << d.get_info<sycl::info::device::name>() << ": host tasks: "
              << (ok ? "ok" : "FAILED") << "\n";
    failures += !ok;
  }
  return failures;
}
