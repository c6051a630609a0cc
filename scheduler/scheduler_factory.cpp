// scheduler::create, the factory: the one place that knows both schedulers, so neither the
// interface (scheduler.cpp) nor the engine has to.
#include "config/settings.h"
#include "scheduler/fleet/fleet_scheduler.h"
#include "scheduler/memory_scheduler.h"
#include "scheduler/scheduler.h"

namespace crawler {
namespace {

// SCHEDULER picks where the queue lives: in this process, or in the fleet's Redis.
bool wants_redis(const settings& settings) {
  auto name = settings.get_string("SCHEDULER");
  if (name == "memory" || name == "scrapy.core.scheduler.Scheduler") return false;
  if (scheduler_is_redis(name)) return true;
  throw settings_error("SCHEDULER: unknown scheduler \"" + name +
                       "\"; valid values are memory, redis");
}

}  // namespace

bool scheduler_is_redis(std::string_view name) {
  return name == "redis" || name == "scrapy_redis.scheduler.Scheduler";
}

bool stores_items_in_redis(const settings& settings) {
  bool stores = settings.get_bool("REDIS_PIPELINE");
  for (const auto& [name, order] : settings.get("ITEM_PIPELINES").items()) {
    // Other classes are Python's, named in settings::warnings(); None disables a pipeline.
    if (name == "scrapy_redis.pipelines.RedisPipeline") stores = stores || !order.is_null();
  }
  auto serializer = settings.get_string("REDIS_ITEMS_SERIALIZER");
  if (stores && !serializer.empty() && serializer != "json.dumps") {
    throw settings_error("REDIS_ITEMS_SERIALIZER: \"" + serializer +
                         "\" is a Python function this crawler cannot run; items are written "
                         "as scrapy-redis's default (json.dumps) writes them");
  }
  return stores;
}

std::unique_ptr<scheduler> scheduler::create(const scheduler_context& context) {
  if (wants_redis(context.settings)) return fleet_scheduler::create(context);
  if (stores_items_in_redis(context.settings)) {
    throw settings_error(
        "REDIS_PIPELINE: items go to Redis with the page that yielded them, which needs "
        "SCHEDULER=redis");
  }
  return memory_scheduler::create(context);
}

}  // namespace crawler
