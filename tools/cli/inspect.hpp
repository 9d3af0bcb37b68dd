#pragma once
// attend inspect: a readable summary of a safetensors file (a checkpoint or any
// tensor file): each tensor's dtype, shape and value range, the metadata, totals.
#include <string>

namespace attend::tools {

// The text `attend inspect PATH` prints. Throws attend::Error for a file that
// cannot be read or is not valid safetensors.
std::string inspect_safetensors(const std::string& path);

}  // namespace attend::tools
