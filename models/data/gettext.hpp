#pragma once
// Sentence pairs from GNU gettext .mo catalogs: every Linux system carries
// thousands of human-translated interface messages (/usr/share/locale/fr/
// LC_MESSAGES/*.mo), a real if small English->French corpus that needs no download.
//
// The .mo layout (GNU gettext manual, "The Format of GNU MO Files"), all numbers
// 32-bit unsigned in the file's byte order:
//   offset 0   magic 0x950412de (read as 0xde120495 the file is of the other byte order)
//   offset 4   revision (major revision, the upper 16 bits, must be 0 or 1)
//   offset 8   N, the number of strings
//   offset 12  O, offset of the table of original strings
//   offset 16  T, offset of the table of translations
//   (offset 20, 24: the hash table, not needed here)
// Each table holds N (length, offset) pairs; string i is `length` bytes at
// `offset`, followed by a NUL byte. A plural entry holds its forms separated by
// NULs; a context entry is "context\x04msgid".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/data/corpus.hpp"

namespace attend {

struct MoEntry {
  std::string msgid;
  std::string msgstr;
};

// Every entry of a catalog, as stored. Checks the magic, the revision, the
// counts and every offset and length against the size, and that no two strings
// share bytes (so the entries never add up to more than the file), and throws
// attend::Error naming the file for anything wrong; it never reads outside
// `bytes`. Strings are bytes here: a catalog may declare another charset, and
// extract_pairs drops what is not UTF-8. read_mo reads a regular file of at most
// limits::kMaxTextFileBytes.
std::vector<MoEntry> parse_mo(std::string_view bytes, std::string_view name);
std::vector<MoEntry> read_mo(const std::string& path);

// Why an entry is no use as a plain sentence pair, or nullptr if it is usable.
// Rejected: the header (empty msgid); plural entries (a NUL in the msgid);
// context entries ('\x04'); an empty translation or one equal to the msgid; text
// that is not valid UTF-8; newlines, tabs or other control characters; printf or
// Python format placeholders (a '%' followed by anything but a space or the end:
// %s %d %1$s %(name)s %%); brace placeholders ('{' or '}': {0} {name}); shell
// variables ('$' followed by a letter, '{' or '('); markup ('<' or '>') and HTML
// entities (&amp; &#39;); keyboard mnemonics ('_' or '&' directly before a
// letter: "_Open", "&File").
const char* rejection_reason(std::string_view msgid, std::string_view msgstr);

// The usable entries as (source = msgid, target = msgstr) pairs, without
// duplicates, in catalog order.
std::vector<SentencePair> extract_pairs(const std::vector<MoEntry>& entries);

struct CatalogHarvest {
  std::vector<SentencePair> pairs;  // deduplicated across catalogs
  std::int64_t catalogs = 0;        // .mo files read successfully
  std::int64_t entries = 0;         // entries in them, before filtering
  std::vector<std::string> errors;  // one message per catalog that could not be read
};

// Reads every *.mo file under `directory`, recursively and in sorted path order
// (so the result does not depend on the file system), e.g.
// /usr/share/locale/fr/LC_MESSAGES (given /usr/share/locale it would mix every
// language). A corrupt or unreadable catalog is reported in `errors` by name and
// the others are still read. Throws only if `directory` is not a directory.
CatalogHarvest harvest_catalogs(const std::string& directory);

}  // namespace attend
