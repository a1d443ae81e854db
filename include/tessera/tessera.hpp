#pragma once
/** @file
 * Everything a Tessera user needs: arrays, graphs, executors, the op registry, clusters, and
 * watching them (progress bars, performance reports). Standard headers and Tessera's own only:
 * Beast, prometheus-cpp and nlohmann-json stay in the library's sources. */
#include "tessera/array.hpp"
#include "tessera/core/block.hpp"
#include "tessera/core/error.hpp"
#include "tessera/distributed/client.hpp"
#include "tessera/distributed/local_cluster.hpp"
#include "tessera/distributed/performance_report.hpp"
#include "tessera/distributed/progress.hpp"
#include "tessera/distributed/ssh_cluster.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/exec/progress.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/init.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/fuse.hpp"
#include "tessera/ops/registry.hpp"
