#pragma once
// attend.hpp: the whole library in one include, for programs built on attend.
// Installed as include/attend/attend.hpp, so an outside project writes
//   #include <attend/attend.hpp>
// after find_package(attend) and target_link_libraries(app PRIVATE attend::attend).
//
// Convention: every folder has an umbrella header <folder>/<folder>.hpp that
// includes the folder's public headers, and this file includes each of them,
// in dependency order (core <- autograd <- layers <- models). A folder that
// gains its umbrella header adds one line here; the test install_umbrella_header
// fails while one is missing. tools/ (the command line) is not part of the library API.
#include "core/core.hpp"
#include "autograd/autograd.hpp"
#include "layers/layers.hpp"
#include "models/models.hpp"
