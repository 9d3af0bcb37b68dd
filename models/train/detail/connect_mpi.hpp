#pragma once
// The MPI world, for connect_world (models/train/distributed.cpp); defined in
// models/train/distributed_mpi.cpp, the one file that includes <mpi.h>. Not part
// of the API: users call connect_world.
#include <memory>

#include "models/train/distributed.hpp"

namespace attend::detail {
// An MPI communicator (MPI initialised); Error when this build has no MPI.
std::unique_ptr<Communicator> connect_mpi();
}  // namespace attend::detail
