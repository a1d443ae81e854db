#pragma once
/** @file Everything a Tessera user needs: arrays, graphs, executors and the op registry. */
#include "tessera/array/array.hpp"
#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/ops/registry.hpp"
