// One SYCL context over devices of two runtimes: PoCL's first device and
// Intel's CPU OpenCL device. `one_context one` puts both in one
// sycl::context (our library with UR_RUST_ONE_PLATFORM=1: one platform
// holds every runtime's devices); `one_context two` gives each its own
// context (what every SYCL implementation does across runtimes: libsycl
// then moves the buffer between the contexts through the host itself).
//
// A 256 MiB buffer (`UR_ONE_CONTEXT_MIB` changes it) is written on PoCL's
// device, then read on Intel's: every byte of the read is checked. Prints
// `NS <best ns of the read on Intel's device, migration included>`, then
// `one context over two runtimes: ok` (or `two contexts: ok`).
#include <sycl/sycl.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

static bool is_pocl(const sycl::device &d) {
  return d.get_info<sycl::info::device::version>().find("PoCL") != std::string::npos;
}

// Intel's CPU OpenCL runtime. Not by the device's vendor alone: PoCL
// reports the CPU's ("GenuineIntel"), and which runtime's devices come
// first depends on the order the ICD loader reads its vendor files in.
static bool is_intel(const sycl::device &d) {
  return !is_pocl(d) && d.get_info<sycl::info::device::vendor>().find("Intel") != std::string::npos;
}

int main(int argc, char **argv) {
  const bool one = argc > 1 && std::string(argv[1]) == "one";
  std::optional<sycl::device> a, b;
  for (const auto &d : sycl::device::get_devices()) {
    if (!a && is_pocl(d)) a = d;
    if (!b && is_intel(d)) b = d;
  }
  if (!a || !b) {
    std::printf("no PoCL device and Intel CPU OpenCL device\n");
    return 1;
  }
  if (one && a->get_platform() != b->get_platform()) {
    std::printf("the two devices are on different platforms (set UR_RUST_ONE_PLATFORM=1 with our library)\n");
    return 1;
  }
  std::optional<sycl::queue> qa, qb;
  if (one) {
    sycl::context ctx({*a, *b});
    qa.emplace(ctx, *a);
    qb.emplace(ctx, *b);
  } else {
    qa.emplace(*a);
    qb.emplace(*b);
  }
  const char *mib = std::getenv("UR_ONE_CONTEXT_MIB");
  const size_t n = size_t(mib ? std::atoi(mib) : 256) << 20;
  std::vector<unsigned char> src(n), back(n);
  sycl::buffer<unsigned char, 1> buf{sycl::range<1>(n)};
  long best = -1;
  for (int round = 0; round < 5; round++) {
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)((i * 7 + round) % 251);
    // Made current on PoCL's device.
    qa->submit([&](sycl::handler &h) {
        sycl::accessor acc(buf, h, sycl::write_only);
        h.copy(src.data(), acc);
      }).wait();
    // Read on Intel's: the migration and the read, timed.
    auto t0 = std::chrono::steady_clock::now();
    qb->submit([&](sycl::handler &h) {
        sycl::accessor acc(buf, h, sycl::read_only);
        h.copy(acc, back.data());
      }).wait();
    long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    if (best < 0 || ns < best) best = ns;
    if (std::memcmp(src.data(), back.data(), n) != 0) {
      size_t at = std::mismatch(src.begin(), src.end(), back.begin()).first - src.begin();
      std::printf("round %d: byte %zu differs\n", round, at);
      return 2;
    }
  }
  std::printf("NS %ld\n", best);
  std::printf("%s: ok\n", one ? "one context over two runtimes" : "two contexts");
  return 0;
}
