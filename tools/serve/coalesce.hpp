#pragma once
// attend serve --coalesce: requests that wait for the same model with the same
// options are translated together, in one call of translate_lines, by the first
// of them to get the model. Under load that is attend translate's batching; a
// lone request is translated alone, as without --coalesce. Batch composition
// changes the last digits of the scores (as attend translate's --batch does), so
// it is off by default: then a request's answer never depends on the others.
#include <cstdint>
#include <string>
#include <vector>

#include "tools/serve/service.hpp"

namespace attend::tools::serve {

// The n-best lists of `sources` (tokens from checked_tokens), in order. Takes a
// copy of the model itself; with m.coalesce set, joins the requests waiting for one.
std::vector<std::vector<TextTranslation>> translate_for(ServedModel& m, const std::vector<std::string>& sources,
                                                        const std::vector<std::int64_t>& tokens,
                                                        const TranslateFlags& f, const DecodeOptions& options);

}  // namespace attend::tools::serve
