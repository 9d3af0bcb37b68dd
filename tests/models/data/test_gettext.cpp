// models/data/gettext: .mo catalogs built byte by byte in both byte orders, every
// kind of corruption, the entry filter, and the directory harvest.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "models/data/gettext.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;
using namespace std::string_literals;

namespace {

void put_u32(std::string& out, std::uint32_t v, bool big_endian) {
  for (int k = 0; k < 4; ++k) out += static_cast<char>((v >> (big_endian ? 8 * (3 - k) : 8 * k)) & 0xFF);
}

void set_u32(std::string& out, std::size_t at, std::uint32_t v, bool big_endian) {
  std::string bytes;
  put_u32(bytes, v, big_endian);
  out.replace(at, 4, bytes);
}

// A .mo file as GNU msgfmt lays it out (without the optional hash table): the
// 28-byte header, the table of originals at 28, the table of translations after
// it, then the strings, each followed by a NUL.
std::string build_mo(const std::vector<MoEntry>& entries, bool big_endian) {
  const auto n = static_cast<std::uint32_t>(entries.size());
  const std::uint32_t originals = 28, translations = 28 + 8 * n;
  std::uint32_t offset = 28 + 16 * n;
  std::string tables, strings;
  for (int side = 0; side < 2; ++side)
    for (const MoEntry& e : entries) {
      const std::string& s = side == 0 ? e.msgid : e.msgstr;
      put_u32(tables, static_cast<std::uint32_t>(s.size()), big_endian);
      put_u32(tables, offset, big_endian);
      strings += s;
      strings += '\0';
      offset += static_cast<std::uint32_t>(s.size()) + 1;
    }
  std::string out;
  put_u32(out, 0x950412de, big_endian);
  put_u32(out, 0, big_endian);  // revision
  put_u32(out, n, big_endian);
  put_u32(out, originals, big_endian);
  put_u32(out, translations, big_endian);
  put_u32(out, 0, big_endian);  // hash table size
  put_u32(out, 28 + 16 * n, big_endian);
  return out + tables + strings;
}

const std::vector<MoEntry> kEntries = {
    {"", "Content-Type: text/plain; charset=UTF-8\n"},
    {"Open file", "Ouvrir le fichier"},
    {"apple\0apples"s, "pomme\0pommes"s},
    {"menu\x04Open", "Ouvrir"},
    {"Cannot open %s", "Impossible d'ouvrir %s"},
    {"Save", "Enregistrer"},
    {"Quit", ""},
    {"OK", "OK"},
    {"The window is too small.", "La fen\u00EAtre est trop petite."},
};

// Parses a copy of exactly `bytes.size()` bytes on the heap, so that reading one
// byte too far is a heap-buffer-overflow under AddressSanitizer.
std::vector<MoEntry> parse_exact(const std::string& bytes, std::string_view name) {
  std::vector<char> copy(bytes.begin(), bytes.end());
  return parse_mo(std::string_view(copy.data(), copy.size()), name);
}

struct TempDir {
  attend::testing::Scratch scratch{"attend-test-gettext"};
  void write(const std::string& relative, const std::string& content) const {
    std::filesystem::create_directories((path / relative).parent_path());
    std::ofstream(path / relative, std::ios::binary) << content;
  }
  const std::filesystem::path& path = scratch.dir;
};

}  // namespace

TEST_CASE("parse_mo reads every entry in both byte orders") {
  for (bool big : {false, true}) {
    CAPTURE(big);
    std::vector<MoEntry> entries = parse_exact(build_mo(kEntries, big), "fr.mo");
    REQUIRE(entries.size() == kEntries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      CHECK(entries[i].msgid == kEntries[i].msgid);
      CHECK(entries[i].msgstr == kEntries[i].msgstr);
    }
  }
  // The magic number is what tells the byte order: the first bytes differ.
  CHECK(build_mo({}, false).substr(0, 4) == "\xde\x12\x04\x95");
  CHECK(build_mo({}, true).substr(0, 4) == "\x95\x04\x12\xde");
  CHECK(parse_exact(build_mo({}, true), "empty.mo").empty());
}

TEST_CASE("extract_pairs keeps plain translations only, without duplicates") {
  std::vector<MoEntry> entries = kEntries;
  entries.push_back({"Save", "Enregistrer"});  // duplicate pair
  entries.push_back({"Save", "Sauvegarder"});  // same source, another translation: kept
  CHECK(extract_pairs(entries) == std::vector<SentencePair>{{"Open file", "Ouvrir le fichier"},
                                                             {"Save", "Enregistrer"},
                                                             {"The window is too small.", "La fen\u00EAtre est trop petite."},
                                                             {"Save", "Sauvegarder"}});
  CHECK(extract_pairs({}).empty());
}

TEST_CASE("rejection_reason names why an entry is not a plain sentence pair") {
  const auto reason = [](std::string_view id, std::string_view str) {
    const char* r = rejection_reason(id, str);
    return std::string(r ? r : "usable");
  };
  CHECK(reason("Open", "Ouvrir") == "usable");
  CHECK(reason("", "header") == "header entry");
  CHECK(reason("file\0files"s, "fichier\0fichiers"s) == "plural entry");
  CHECK(reason("verb\x04Open", "Ouvrir") == "context entry");
  CHECK(reason("Open", "") == "empty translation");
  CHECK(reason("Open", "Open") == "translation equals the source");
  CHECK(reason("Line one\nLine two", "Ligne un\nLigne deux") == "newline");
  CHECK(reason("Name:\tvalue", "Nom :\tvaleur") == "tab");
  CHECK(reason("Bell\a", "Cloche") == "control character");
  CHECK(reason("Cannot open %s", "Impossible d'ouvrir %s") == "format placeholder");
  CHECK(reason("%d files", "%d fichiers") == "format placeholder");
  CHECK(reason("Move %1$s to %2$s", "D\u00E9placer %1$s vers %2$s") == "format placeholder");
  CHECK(reason("%(name)s left", "%(name)s est parti") == "format placeholder");
  CHECK(reason("100%", "100 %") == "usable");   // '%' at the end or before a space is text
  CHECK(reason("50 % off", "50 % de remise") == "usable");
  CHECK(reason("Hello {0}", "Bonjour {0}") == "brace placeholder");
  CHECK(reason("Hello {name}", "Bonjour {name}") == "brace placeholder");
  CHECK(reason("Set $HOME", "D\u00E9finir $HOME") == "shell variable");
  CHECK(reason("Costs $5", "Co\u00FBte 5 $") == "usable");
  CHECK(reason("<b>Bold</b>", "<b>Gras</b>") == "markup");
  CHECK(reason("Usage: ls <dir>", "Usage : ls <r\u00E9p>") == "markup");
  CHECK(reason("Tom &amp; Jerry", "Tom &amp; Jerry et cie") == "HTML entity");
  CHECK(reason("It&#39;s", "C&#39;est") == "HTML entity");
  CHECK(reason("Salt & pepper", "Sel & poivre") == "usable");
  CHECK(reason("_Open", "_Ouvrir") == "keyboard mnemonic");
  CHECK(reason("&File", "&Fichier") == "keyboard mnemonic");
  CHECK(reason("Open", "_\u00C9diter") == "keyboard mnemonic");
  CHECK(reason("Open", "Ouvr\xC3") == "invalid UTF-8");
  CHECK(reason("Caf\xE9", "Caf\u00E9") == "invalid UTF-8");  // a Latin-1 catalog
}

TEST_CASE("parse_mo rejects a bad header with a message naming the file") {
  const std::string good = build_mo(kEntries, false);
  CHECK_THROWS_WITH_AS(parse_exact(good.substr(0, 12), "tiny.mo"),
                       "read_mo: tiny.mo: 12 bytes is too short for a .mo header (20 bytes)", Error);
  CHECK_THROWS_WITH_AS(parse_exact("", "empty.mo"), "read_mo: empty.mo: 0 bytes is too short for a .mo header (20 bytes)",
                       Error);
  std::string elf = good;
  elf.replace(0, 4, "\x7f" "ELF");
  CHECK_THROWS_WITH_AS(parse_exact(elf, "elf.mo"), "read_mo: elf.mo: not a .mo file (magic number 0x464c457f)", Error);
  for (bool big : {false, true}) {
    std::string rev = build_mo(kEntries, big);
    set_u32(rev, 4, 2u << 16, big);
    CHECK_THROWS_WITH_AS(parse_exact(rev, "rev.mo"), "read_mo: rev.mo: unsupported major revision 2", Error);
    set_u32(rev, 4, 1u << 16 | 1, big);  // revision 1.1 is fine
    CHECK(parse_exact(rev, "rev.mo").size() == kEntries.size());
  }
}

TEST_CASE("parse_mo rejects counts and offsets that point past the end") {
  for (bool big : {false, true}) {
    CAPTURE(big);
    const std::string good = build_mo(kEntries, big);
    const std::string size = std::to_string(good.size());
    std::string many = good;
    set_u32(many, 8, 1000000, big);
    CHECK_THROWS_WITH_AS(parse_exact(many, "many.mo"),
                         ("read_mo: many.mo: the table of original strings (1000000 entries at offset 28) runs past "
                          "the end of the file (" + size + " bytes)").c_str(),
                         Error);
    std::string huge = good;
    set_u32(huge, 8, 0xFFFFFFFF, big);  // N * 8 does not fit in 32 bits
    CHECK_THROWS_AS(parse_exact(huge, "huge.mo"), Error);
    std::string table = good;
    set_u32(table, 16, static_cast<std::uint32_t>(good.size()) - 8, big);
    CHECK_THROWS_WITH_AS(parse_exact(table, "table.mo"),
                         ("read_mo: table.mo: the table of translations (9 entries at offset " +
                          std::to_string(good.size() - 8) + ") runs past the end of the file (" + size + " bytes)")
                             .c_str(),
                         Error);
    std::string offset = good;
    set_u32(offset, 28 + 8 * 9 + 8 * 1 + 4, 0xFFFFFFF0, big);  // translation 1's offset
    CHECK_THROWS_WITH_AS(parse_exact(offset, "offset.mo"),
                         ("read_mo: offset.mo: translation 1 (offset 4294967280, length 17) runs past the end of the "
                          "file (" + size + " bytes)").c_str(),
                         Error);
    std::string length = good;
    set_u32(length, 28 + 8 * 5, 0xFFFFFFFF, big);  // original 5's length
    CHECK_THROWS_AS(parse_exact(length, "length.mo"), Error);
    std::string unterminated = good;
    set_u32(unterminated, 28 + 8 * 1, 3, big);  // "Open file" cut to "Ope": no NUL after it
    CHECK_THROWS_WITH_AS(parse_exact(unterminated, "nul.mo"),
                         "read_mo: nul.mo: original string 1 (offset 173, length 3) is not followed by a NUL byte", Error);
  }
}

TEST_CASE("parse_mo throws, never crashes, for a file truncated at any length") {
  for (bool big : {false, true}) {
    const std::string good = build_mo(kEntries, big);
    for (std::size_t length = 0; length < good.size(); ++length) {
      CAPTURE(length);
      CHECK_THROWS_AS(parse_exact(good.substr(0, length), "cut.mo"), Error);
    }
    CHECK(parse_exact(good, "whole.mo").size() == kEntries.size());
  }
}

TEST_CASE("parse_mo survives random corruption: it parses or throws attend::Error") {
  const std::string good = build_mo(kEntries, false);
  Generator gen(17);
  int thrown = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = good;
    // Corrupt the header and tables (where the numbers are) most of the time.
    const std::int64_t span = gen.bernoulli(0.8) ? 28 + 16 * 9 : static_cast<std::int64_t>(good.size());
    for (int k = 0, flips = 1 + static_cast<int>(gen.randint(4)); k < flips; ++k)
      bad[static_cast<std::size_t>(gen.randint(span))] = static_cast<char>(gen.randint(256));
    try {
      parse_exact(bad, "fuzz.mo");
    } catch (const Error&) {
      ++thrown;
    }
  }
  CHECK(thrown > 100);  // most corruptions of the numbers are caught
}

TEST_CASE("harvest_catalogs reads a tree, reports a corrupt catalog by name, keeps the others") {
  TempDir dir;
  dir.write("fr/LC_MESSAGES/a.mo", build_mo({{"Open file", "Ouvrir le fichier"}, {"Save", "Enregistrer"}}, false));
  dir.write("fr/LC_MESSAGES/b.mo", build_mo({{"Save", "Enregistrer"}, {"Close", "Fermer"}, {"OK", "OK"}}, true));
  dir.write("fr/LC_MESSAGES/broken.mo", "not a catalog at all, but long enough");
  dir.write("fr/LC_MESSAGES/notes.txt", "ignored");
  CatalogHarvest harvest = harvest_catalogs(dir.path.string());
  CHECK(harvest.catalogs == 2);
  CHECK(harvest.entries == 5);
  CHECK(harvest.pairs ==
        std::vector<SentencePair>{{"Open file", "Ouvrir le fichier"}, {"Save", "Enregistrer"}, {"Close", "Fermer"}});
  const std::string broken = (dir.path / "fr/LC_MESSAGES/broken.mo").string();
  CHECK(harvest.errors == std::vector<std::string>{"read_mo: " + broken + ": not a .mo file (magic number 0x20746f6e)"});
  CHECK_THROWS_WITH_AS(harvest_catalogs(broken), ("harvest_catalogs: '" + broken + "' is not a directory").c_str(), Error);
  CHECK_THROWS_WITH_AS(read_mo(broken + ".missing"),
                       ("read_mo: " + broken + ".missing: cannot open: No such file or directory").c_str(), Error);
}

TEST_CASE("the system's French catalogs give a usable corpus") {
  const std::string dir = "/usr/share/locale/fr/LC_MESSAGES";
  if (!std::filesystem::is_directory(dir)) {
    MESSAGE("no French catalogs in " << dir << "; skipping the real-data check");
    return;
  }
  CatalogHarvest harvest = harvest_catalogs(dir);
  MESSAGE(harvest.catalogs << " catalogs, " << harvest.entries << " entries, " << harvest.pairs.size() << " pairs, "
                           << harvest.errors.size() << " errors");
  if (harvest.catalogs < 5) {
    MESSAGE("fewer than 5 French catalogs; skipping the size check");
    return;
  }
  CHECK(harvest.errors.empty());
  // Filtering keeps a sizeable but strictly smaller part of the entries.
  CHECK(static_cast<std::int64_t>(harvest.pairs.size()) > harvest.entries / 20);
  CHECK(static_cast<std::int64_t>(harvest.pairs.size()) < harvest.entries);
  for (const SentencePair& pair : harvest.pairs) {
    REQUIRE(rejection_reason(pair.source, pair.target) == nullptr);
  }
}
