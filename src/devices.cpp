#include "devices.hpp"

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <thread>

#if KNN_HAVE_CUDA
#include "core/cuda/runtime.hpp"
#endif

namespace knn {

DeviceDiscovery discover_devices() {
  DeviceDiscovery d;
#if !KNN_HAVE_CUDA
  d.note = "built without CUDA";
#else
  cudaRuntimeGetVersion(&d.runtime_version);
  if (cudaDriverGetVersion(&d.driver_version) != cudaSuccess) d.driver_version = 0;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    // cudaErrorNoDevice / cudaErrorInsufficientDriver (no driver) mean zero devices; so does any
    // other failure to enumerate, reported in the note.
    d.note = fmt::format("no CUDA device ({})", cudaGetErrorName(err));
    return d;
  }
  if (count == 0) d.note = "no CUDA device";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    KNN_CUDA_TRY(cudaGetDeviceProperties(&p, i));
    DeviceInfo info;
    info.ordinal = i;
    info.name = p.name;
    info.cc_major = p.major;
    info.cc_minor = p.minor;
    info.sm_count = p.multiProcessorCount;
    info.total_memory = p.totalGlobalMem;
    auto attr = [i](cudaDeviceAttr a) {
      int v = 0;
      return cudaDeviceGetAttribute(&v, a, i) == cudaSuccess ? v : 0;
    };
    info.clock_khz = attr(cudaDevAttrClockRate);
    info.memory_clock_khz = attr(cudaDevAttrMemoryClockRate);
    info.memory_bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
    info.memory_bandwidth_gbs = 2.0 * info.memory_clock_khz * 1e3 * (info.memory_bus_bits / 8.0) / 1e9;
    info.l2_bytes = std::size_t(p.l2CacheSize);
    info.shared_per_block_optin = p.sharedMemPerBlockOptin;
    info.max_threads_per_block = p.maxThreadsPerBlock;
    info.max_texture2d_width = p.maxTexture2D[0];
    info.max_texture2d_height = p.maxTexture2D[1];
    info.max_texture2d_linear_width = p.maxTexture2DLinear[0];
    info.max_texture2d_linear_height = p.maxTexture2DLinear[1];
    info.max_texture2d_linear_pitch = p.maxTexture2DLinear[2];
    info.total_constant_memory = p.totalConstMem;
    info.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    {
      cuda::DeviceScope scope(i);
      std::size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) info.free_memory = free_b;
      else (void)cudaGetLastError();
    }
    d.devices.push_back(std::move(info));
  }
#endif
  return d;
}

std::size_t device_free_memory(int ordinal) {
#if KNN_HAVE_CUDA
  cuda::DeviceScope scope(ordinal);
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) return free_b;
  (void)cudaGetLastError();
#else
  (void)ordinal;
#endif
  return 0;
}

void trim_device_pools(const std::vector<DeviceInfo>& devices) {
#if KNN_HAVE_CUDA
  for (const auto& d : devices) {
    try {
      detail::trim_pool(d.ordinal);
    } catch (const std::exception&) {
    }
  }
#else
  (void)devices;
#endif
}

std::vector<double> warm_up_devices(const std::vector<DeviceInfo>& devices) {
  std::vector<double> ms(devices.size(), 0.0);
#if KNN_HAVE_CUDA
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        const auto t0 = std::chrono::steady_clock::now();
        detail::run_warmup_kernel(devices[i].ordinal);
        ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
#endif
  return ms;
}

}  // namespace knn
