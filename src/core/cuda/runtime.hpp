#pragma once
// Everything of the CUDA layer at once, for version files that use most of it.
#include "core/cuda/buffers.hpp"
#include "core/cuda/device.hpp"
#include "core/cuda/error.hpp"
#include "core/cuda/pool.hpp"
#include "core/cuda/stream.hpp"
#include "core/cuda/transfers.hpp"
