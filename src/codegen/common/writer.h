// Writer: indented lines of generated source, shared by both dialects.
#pragma once

#include <string>

namespace coil::codegen {

class Writer {
 public:
  /// One line at the current indentation.
  void line(const std::string &text) {
    if (!text.empty()) out_.append(size_t(indent_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  /// `head {` and one level deeper; close() ends the block.
  void open(const std::string &head) {
    line(head.empty() ? "{" : head + " {");
    ++indent_;
  }
  void close(const std::string &tail = "}") {
    --indent_;
    line(tail);
  }
  /// One level deeper or shallower without braces (Python blocks).
  void indent() { ++indent_; }
  void dedent() { --indent_; }
  const std::string &str() const { return out_; }

 private:
  std::string out_;
  int indent_ = 0;
};

}  // namespace coil::codegen
