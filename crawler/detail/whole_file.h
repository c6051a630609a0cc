// Files read and written whole, as the HTTP cache keeps them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace crawler::detail {

/// The bytes of the file at `path`. Throws std::runtime_error "cannot read PATH".
std::string read_whole_file(const std::filesystem::path& path);

/// Writes `content` to a new file at `path`, created by this call with `mode` (less what the umask
/// takes): a file or a link already there is refused, never followed or truncated. Throws
/// std::runtime_error "cannot write PATH: why"; what was written stays.
void write_whole_file(const std::filesystem::path& path, std::string_view content, mode_t mode);

}  // namespace crawler::detail
