// A Redis reply as the client hands it over, and the command and completion types of
// client.h, apart so that the parts of the client can share them.
#pragma once

#include <exception>
#include <string>
#include <vector>

namespace crawler::redis {

/// One reply, owned (a copy of hiredis's reply tree).
struct reply {
  enum class kind { string, status, integer, nil, array, error };
  kind type = kind::nil;
  std::string str;  // string, status and error replies
  long long integer = 0;
  std::vector<reply> elements;

  bool is_error() const { return type == kind::error; }
  /// A readable form for error messages: `"OK"`, `(integer) 3`, `(error) ERR ...`, `[...]`.
  std::string describe() const;
};

using command = std::vector<std::string>;
using pipeline_signature = void(std::exception_ptr, std::vector<reply>);
using command_signature = void(std::exception_ptr, reply);

}  // namespace crawler::redis
