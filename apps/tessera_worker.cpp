// tessera-worker: a thin main over the library (see tessera::distributed::worker_main).
// Task functions beyond the built-in array operations come from --preload plugins.
#include "tessera/init.hpp"

int main(int argc, char** argv) { return tessera::distributed::worker_main(argc, argv); }
