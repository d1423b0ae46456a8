// Lists every platform and device the SYCL runtime sees, with the
// properties a program commonly asks for. The output is compared between
// our adapter library and UR's own OpenCL adapter.
#include <sycl/sycl.hpp>
#include <iostream>

int main() {
  for (const auto &p : sycl::platform::get_platforms()) {
    std::cout << "platform: " << p.get_info<sycl::info::platform::name>() << "\n";
    for (const auto &d : p.get_devices()) {
      std::cout << "  device: " << d.get_info<sycl::info::device::name>()
                << " | type " << (d.is_cpu() ? "cpu" : d.is_gpu() ? "gpu" : "other")
                << " | usm_device " << d.has(sycl::aspect::usm_device_allocations)
                << " | usm_host " << d.has(sycl::aspect::usm_host_allocations)
                << " | usm_shared " << d.has(sycl::aspect::usm_shared_allocations)
                << " | max_alloc>0 " << (d.get_info<sycl::info::device::max_mem_alloc_size>() > 0)
                << " | global_mem>0 " << (d.get_info<sycl::info::device::global_mem_size>() > 0)
                << "\n";
    }
  }
  return 0;
}
