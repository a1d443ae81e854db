#pragma once
/** @file
 * Everything a Tessera user needs: arrays, graphs, executors, the op registry and clusters. */
#include "tessera/array/array.hpp"
#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/distributed/ssh_cluster.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/init.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/fuse.hpp"
#include "tessera/ops/registry.hpp"
