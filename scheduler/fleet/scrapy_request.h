// Scrapy's request dict (scrapy.utils.request.request_to_dict), the form a scrapy-redis fleet
// queues, pickled: what lets our workers and scrapy-redis's share one queue.
//
//   auto taken = crawler::request_from_scrapy_dict(crawler::pickle::read(entry), "books:requests");
//   std::string entry = crawler::pickle::write(crawler::scrapy_dict_of(request));
//
// The dict's members and what they become:
//   url, method, body, priority, dont_filter   the request's own fields
//   headers                                    {name: [values]} (bytes or str), in order
//   callback, errback                          method names (None: the spider's parse / none)
//   meta                                       meta (JSON: tuples read as lists, bytes as UTF-8
//                                              text; other bytes are refused)
//   cookies, cb_kwargs, flags, encoding,       kept as they were in meta "_scrapy_request", so a
//   _class, anything else                      request written back (a retry, a released lease)
//                                              is what Python wrote: a FormRequest stays one
// Nothing here uses cookies or cb_kwargs yet: a C++ callback gets the response and meta.
#pragma once

#include <string_view>

#include "request/request.h"
#include "scheduler/fleet/pickle.h"

namespace crawler {

/// The meta key that keeps what of a Scrapy request has no field here.
inline constexpr std::string_view scrapy_request_meta_key = "_scrapy_request";

/// The request `dict` stands for. Throws std::invalid_argument naming `where` and the member.
request request_from_scrapy_dict(const pickle::value& dict, std::string_view where);

/// Scrapy's request_to_dict of `request`, members in its order. Throws std::invalid_argument,
/// naming the request, for a callback or errback that is not a Python identifier: scrapy-redis
/// would pop the entry and then fail to find the method, and the request would be lost.
pickle::value scrapy_dict_of(const request& request);

}  // namespace crawler
