// tessera-scheduler: a thin main over the library (see tessera::distributed::scheduler_main).
#include "tessera/init.hpp"

int main(int argc, char** argv) { return tessera::distributed::scheduler_main(argc, argv); }
