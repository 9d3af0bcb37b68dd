#pragma once
// A small XML well-formedness checker for the tests of SVG and HTML output:
// every tag closed in order, attributes quoted, entities known. Also counts
// elements by name and class, so tests can check a picture's structure.
#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace attend::testing {

struct XmlSummary {
  bool ok = true;
  std::string error;
  std::map<std::string, int> elements;  // by tag name
  std::map<std::string, int> classes;   // by class attribute value
  std::vector<std::string> data_names;  // data-name attributes, in order
};

inline XmlSummary check_xml(const std::string& text, bool html_void_tags = false) {
  XmlSummary s;
  std::vector<std::string> stack;
  std::size_t i = 0;
  auto fail = [&](std::string why) {
    s.ok = false;
    s.error = why + " at offset " + std::to_string(i);
    return s;
  };
  static const std::vector<std::string> kVoid = {"meta", "br", "img", "hr", "link", "input"};
  while (i < text.size()) {
    if (text[i] == '&') {
      std::size_t end = text.find(';', i);
      if (end == std::string::npos || end - i > 8) return fail("bad entity");
      std::string ent = text.substr(i + 1, end - i - 1);
      if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos" && ent[0] != '#')
        return fail("unknown entity &" + ent + ";");
      i = end + 1;
      continue;
    }
    if (text[i] != '<') {
      ++i;
      continue;
    }
    if (text.compare(i, 4, "<!--") == 0) {
      std::size_t end = text.find("-->", i);
      if (end == std::string::npos) return fail("unclosed comment");
      i = end + 3;
      continue;
    }
    if (text.compare(i, 2, "<!") == 0 || text.compare(i, 2, "<?") == 0) {
      i = text.find('>', i);
      if (i == std::string::npos) return fail("unclosed declaration");
      ++i;
      continue;
    }
    std::size_t end = text.find('>', i);
    if (end == std::string::npos) return fail("unclosed tag");
    std::string tag = text.substr(i + 1, end - i - 1);
    bool closing = !tag.empty() && tag[0] == '/';
    bool self_closing = !tag.empty() && tag.back() == '/';
    std::size_t name_end = closing ? 1 : 0;
    while (name_end < tag.size() && !std::isspace(static_cast<unsigned char>(tag[name_end])) && tag[name_end] != '/') ++name_end;
    std::string name = tag.substr(closing ? 1 : 0, name_end - (closing ? 1 : 0));
    if (name.empty()) return fail("empty tag name");
    if (closing) {
      if (stack.empty() || stack.back() != name) return fail("</" + name + "> closes <" + (stack.empty() ? "" : stack.back()) + ">");
      stack.pop_back();
    } else {
      // attributes: name="value" pairs
      std::size_t q = 0;
      for (char ch : tag) q += ch == '"';
      if (q % 2 != 0) return fail("unbalanced quotes in <" + name + ">");
      ++s.elements[name];
      for (const char* attr : {" class=\"", " data-name=\""}) {
        std::size_t a = tag.find(attr);
        if (a != std::string::npos) {
          std::size_t start = a + std::string(attr).size();
          std::string value = tag.substr(start, tag.find('"', start) - start);
          if (std::string(attr) == " class=\"") ++s.classes[value];
          else s.data_names.push_back(value);
        }
      }
      bool is_void = html_void_tags && std::find(kVoid.begin(), kVoid.end(), name) != kVoid.end();
      if (!self_closing && !is_void) {
        stack.push_back(name);
        if (name == "script" || name == "style") {  // raw text up to the closing tag
          std::size_t close = text.find("</" + name + ">", end);
          if (close == std::string::npos) return fail("unclosed <" + name + ">");
          end = close - 1;
        }
      }
    }
    i = end + 1;
  }
  if (!stack.empty()) return fail("<" + stack.back() + "> never closed");
  return s;
}

}  // namespace attend::testing
