#pragma once
// safetensors: the tensor file format of checkpoints (https://github.com/huggingface/safetensors).
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header, space-padded][data]
//   header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...,
//             "__metadata__": {"key": "value", ...}}          (metadata optional)
// data_offsets are byte offsets into the data section, which the tensors cover
// exactly, without holes or overlaps. Data is raw little-endian, row-major.
//
// attend reads and writes F32 and F64 as Tensors, and I8 as Int8Arrays (the
// weights of int8 models, models/quantize.hpp). Files written here load in Python
// (safetensors.torch.load_file, safetensors.numpy.load_file), and files written
// there with these dtypes load here.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace attend {

// An I8 tensor: values row-major, shape.numel() of them.
struct Int8Array {
  Shape shape;
  std::vector<std::int8_t> values;
};

// Writes the tensors (all defined), the int8 arrays and string metadata to
// path, atomically: a crash or error during the write leaves any previous file
// at path whole. Data is laid out F64 tensors first, then F32, then I8, each
// group by name, so that every tensor is aligned to its element size (as the
// Python package does). A name may appear once over both maps; an array's
// values must number its shape's elements.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const std::map<std::string, Int8Array>& int8 = {});

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;     // F32 and F64
  std::map<std::string, Int8Array> int8;     // I8
  std::map<std::string, std::string> metadata;
};

// Reads a whole file. Everything is validated before any data is read: a
// truncated, corrupted or hostile file throws attend::Error naming the file and
// the problem ("load_safetensors: model.safetensors: tensor 'w' has data_offsets
// [0, 12] but F32 [2, 2] needs 16 bytes") and never reads out of bounds.
SafetensorsFile load_safetensors(const std::string& path);

// Headers longer than this are refused as corrupt (the Python package's limit).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

}  // namespace attend
