// How both halves of redis::client hand a pipeline's outcome to its caller. Internal.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <memory>

namespace crawler::redis::detail {

/// Completes `b` (a batch with `done`, `handler` and `replies`) once. Completions always go
/// through the handler's executor (the caller's, or `fallback`, the client's strand), never inline
/// from a hiredis callback, so a handler may freely issue commands or close the client.
template <typename Batch>
void complete(const std::shared_ptr<Batch>& b, std::exception_ptr error,
              const boost::asio::any_io_executor& fallback) {
  if (b->done) return;
  b->done = true;
  auto executor = boost::asio::get_associated_executor(b->handler, fallback);
  boost::asio::post(fallback, boost::asio::bind_executor(
                                  executor, [handler = std::move(b->handler), error,
                                             replies = std::move(b->replies)]() mutable {
                                    std::move(handler)(error, std::move(replies));
                                  }));
}

}  // namespace crawler::redis::detail
