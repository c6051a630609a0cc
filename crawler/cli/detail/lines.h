// The lines of a file or of standard input, read a block at a time, for the commands that take
// URL lists (fingerprint, dedup): a fingerprint costs half a microsecond, and std::getline on
// std::cin (synced with stdio) took four times that per line.
//
//   for_each_line(stdin, [](std::string_view line, std::size_t number) { ... });
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string_view>

namespace crawler::cli::detail {

/// Calls `line` with each line of `file` (without its '\n') and its number, from 1; a last line
/// without a newline counts too. Returns false when reading failed before the end of the file.
bool for_each_line(std::FILE* file, const std::function<void(std::string_view, std::size_t)>& line);

}  // namespace crawler::cli::detail
