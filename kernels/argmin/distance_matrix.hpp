#pragma once
// The distance-matrix versions' shared driver (v1, v2): they differ only in how each row's argmin is found.
#include <cstddef>
#include <functional>

#include "kernels/argmin/gpu_frame.hpp"

namespace knn::gpu {

// Finds the argmin of `rows` matrix rows (row r is query first_row + r; n floats each, contiguous),
// writing answers[first_row + r]; enqueues on gpu.stream() (the driver times it as "reduce").
using ReduceRows =
    std::function<void(SingleGpu& gpu, const float* matrix, int first_row, int rows, DeviceAnswers& answers)>;

// Uploads the problem, then for each batch of query rows computes their squared distances to every
// reference into a rows × n matrix in global memory ("distances") and calls reduce_rows ("reduce");
// finally downloads the answers. The batch holds all m rows when the m × n matrix fits the device's
// free memory (cudaMemGetInfo), otherwise as many rows as fit, and ctx.path says so. Throws
// knn::OutOfMemoryError when not even one row fits.
// Device bytes the driver needs at least: the inputs, the answers, one matrix row and the reserve.
std::size_t distance_matrix_device_bytes(const Problem& p, const Environment& env);

void run_distance_matrix_version(const Problem& p, Neighbors out, RunContext& ctx, const ReduceRows& reduce_rows);

}  // namespace knn::gpu
