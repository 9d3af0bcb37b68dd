#pragma once
// printable(s): text from a file or a user, made safe to show in a message or on
// a terminal. Valid UTF-8 letters pass unchanged; control characters (C0, DEL
// and C1, which include the terminal's escape sequences), backslashes and bytes
// that are not valid UTF-8 are shown as escapes: "<pad>\r", "\x1b[31m", "\xff".
#include <string>
#include <string_view>

namespace attend {

std::string printable(std::string_view s);

}  // namespace attend
