#include "redis/client.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <csignal>
#include <deque>
#include <mutex>

#include "redis/backoff.h"
#include "redis/detail/cluster.h"
#include "redis/detail/completion.h"

namespace crawler::redis {

using detail::complete;

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

reply convert(const redisReply* raw) {
  reply out;
  switch (raw->type) {
    case REDIS_REPLY_STRING:
      out.type = reply::kind::string;
      break;
    case REDIS_REPLY_STATUS:
      out.type = reply::kind::status;
      break;
    case REDIS_REPLY_ERROR:
      out.type = reply::kind::error;
      break;
    case REDIS_REPLY_INTEGER:
      out.type = reply::kind::integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = reply::kind::array;
      break;
    default:
      out.type = reply::kind::nil;
      break;
  }
  if (raw->str) out.str.assign(raw->str, raw->len);
  out.integer = raw->integer;
  out.elements.reserve(raw->elements);
  for (std::size_t i = 0; i < raw->elements; ++i) out.elements.push_back(convert(raw->element[i]));
  return out;
}

// One pipeline in flight: its replies fill in as they arrive, and it completes once.
struct batch {
  // Built in one step: Boost 1.81's any_completion_handler move-assignment recurses forever (it
  // copies from an lvalue through its converting constructor), so handlers are only ever
  // move-constructed.
  batch(std::vector<command> commands, asio::any_completion_handler<pipeline_signature> handler)
      : commands(std::move(commands)), handler(std::move(handler)) {}

  std::vector<command> commands;
  asio::any_completion_handler<pipeline_signature> handler;
  std::vector<reply> replies;
  std::size_t remaining = 0;
  bool done = false;
  clock::time_point deadline;
};

}  // namespace

std::string reply::describe() const {
  switch (type) {
    case kind::string:
      return "\"" + str + "\"";
    case kind::status:
      return str;
    case kind::error:
      return "(error) " + str;
    case kind::integer:
      return "(integer) " + std::to_string(integer);
    case kind::nil:
      return "(nil)";
    case kind::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < elements.size(); ++i)
        out += (i ? ", " : "") + elements[i].describe();
      return out + "]";
    }
  }
  return "?";
}

// One hiredis connection and the Asio descriptor that watches its socket. hiredis owns the fd: the
// descriptor is released, never closed. hiredis reaches this object through ev.data; Asio handlers
// hold it by shared_ptr, so it outlives every wait on its socket.
struct connection : std::enable_shared_from_this<connection> {
  redisAsyncContext* context = nullptr;
  asio::posix::stream_descriptor socket;
  bool want_read = false, want_write = false, reading = false, writing = false;
  std::weak_ptr<detail::client_state> owner;

  explicit connection(const asio::strand<asio::any_io_executor>& strand) : socket(strand) {}

  void arm(bool read) {
    bool& waiting = read ? reading : writing;
    if (waiting || !socket.is_open()) return;
    waiting = true;
    socket.async_wait(read ? asio::posix::stream_descriptor::wait_read
                           : asio::posix::stream_descriptor::wait_write,
                      [self = shared_from_this(), read](boost::system::error_code ec) {
                        (read ? self->reading : self->writing) = false;
                        if (ec || !self->context) return;
                        bool& wanted = read ? self->want_read : self->want_write;
                        if (!wanted) return;
                        if (read) {
                          redisAsyncHandleRead(self->context);
                        } else {
                          redisAsyncHandleWrite(self->context);
                        }
                        // hiredis may have freed the context (and called cleanup) meanwhile.
                        if (self->context && wanted) self->arm(read);
                      });
  }

  // The hooks of hiredis's event-loop contract; idempotent, as async.h requires.
  static void add_read(void* data) {
    auto* c = static_cast<connection*>(data);
    c->want_read = true;
    c->arm(true);
  }
  static void del_read(void* data) { static_cast<connection*>(data)->want_read = false; }
  static void add_write(void* data) {
    auto* c = static_cast<connection*>(data);
    c->want_write = true;
    c->arm(false);
  }
  static void del_write(void* data) { static_cast<connection*>(data)->want_write = false; }
  static void cleanup(void* data) {
    auto* c = static_cast<connection*>(data);
    c->want_read = c->want_write = false;
    c->context = nullptr;
    if (c->socket.is_open()) c->socket.release();  // cancels pending waits; hiredis closes the fd
  }
};

struct detail::client_state : std::enable_shared_from_this<detail::client_state> {
  enum class phase { idle, connecting, connected, backing_off, closed };

  asio::strand<asio::any_io_executor> strand;
  endpoint where;
  asio::ip::tcp::resolver resolver;
  asio::steady_timer connect_timer, backoff_timer, command_timer;
  phase current = phase::idle;
  std::shared_ptr<connection> conn;
  std::deque<std::shared_ptr<batch>> waiting;    // issued while not connected
  std::deque<std::shared_ptr<batch>> in_flight;  // sent, replies pending (FIFO, as Redis answers)
  backoff reconnect_backoff{100ms, 5000ms};
  std::string last_error;
  bool command_timer_armed = false;
  int setup_pending = 0;  // AUTH / SELECT replies still to come before commands may go out

  client_state(asio::any_io_executor executor, endpoint where)
      : strand(asio::make_strand(executor)),
        where(std::move(where)),
        resolver(strand),
        connect_timer(strand),
        backoff_timer(strand),
        command_timer(strand) {}

  // Reached when the event loop is torn down with the connection still open (the client's own
  // close never ran): hiredis's context would otherwise leak. Callbacks find no owner and return.
  ~client_state() { free_context(); }

  // Frees hiredis's context; hiredis calls every pending reply callback with no reply (failing
  // its pipeline with last_error) and then the cleanup hook, which releases the descriptor.
  void free_context() {
    if (!conn || !conn->context) return;
    redisAsyncContext* ac = conn->context;
    conn->context = nullptr;
    redisAsyncFree(ac);
  }

  std::exception_ptr error(const std::string& message) const {
    return std::make_exception_ptr(redis_error(message));
  }

  void fail_waiting(const std::string& message) {
    auto batches = std::move(waiting);
    waiting.clear();
    for (auto& b : batches) complete(b, error(message), strand);
  }

  void submit(std::shared_ptr<batch> b) {
    if (b->commands.empty()) return complete(b, nullptr, strand);
    switch (current) {
      case phase::closed:
        return complete(b, error("Redis client for " + where.address() + " is closed"), strand);
      case phase::connected:
        return send(b);
      case phase::idle:
        waiting.push_back(std::move(b));
        return connect();
      case phase::connecting:
      case phase::backing_off:
        waiting.push_back(std::move(b));
        return;
    }
  }

  void connect() {
    current = phase::connecting;
    last_error.clear();
    connect_timer.expires_after(where.connect_timeout);
    connect_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->current != phase::connecting) return;
      self->connect_failed("cannot connect to Redis at " + self->where.address() +
                           ": timed out after " +
                           std::to_string(self->where.connect_timeout.count()) + " ms");
    });
    resolver.async_resolve(
        where.host, std::to_string(where.port),
        [self = shared_from_this()](boost::system::error_code ec,
                                    asio::ip::tcp::resolver::results_type results) {
          if (self->current != phase::connecting) return;
          if (ec || results.empty()) {
            return self->connect_failed("cannot connect to Redis at " + self->where.address() +
                                        ": cannot resolve host: " + ec.message());
          }
          self->open_socket(results.begin()->endpoint().address().to_string());
        });
  }

  void open_socket(const std::string& ip) {
    redisAsyncContext* ac = redisAsyncConnect(ip.c_str(), where.port);
    if (!ac || ac->err) {
      std::string reason = ac ? ac->errstr : "out of memory";
      if (ac) redisAsyncFree(ac);
      return connect_failed("cannot connect to Redis at " + where.address() + ": " + reason);
    }
    conn = std::make_shared<connection>(strand);
    conn->context = ac;
    conn->owner = weak_from_this();
    boost::system::error_code ec;
    conn->socket.assign(ac->c.fd, ec);
    ac->data = conn.get();
    ac->ev.data = conn.get();
    ac->ev.addRead = &connection::add_read;
    ac->ev.delRead = &connection::del_read;
    ac->ev.addWrite = &connection::add_write;
    ac->ev.delWrite = &connection::del_write;
    ac->ev.cleanup = &connection::cleanup;
    redisAsyncSetDisconnectCallback(ac, &client_state::on_disconnect);
    redisAsyncSetConnectCallback(ac, &client_state::on_connect);  // arms the first write wait
  }

  static std::shared_ptr<client_state> owner_of(const redisAsyncContext* ac) {
    return static_cast<connection*>(ac->data)->owner.lock();
  }

  static void on_connect(const redisAsyncContext* ac, int status) {
    auto self = owner_of(ac);
    if (!self || self->current != phase::connecting) return;
    if (status != REDIS_OK) {
      // hiredis frees the context itself after this callback returns.
      static_cast<connection*>(ac->data)->context = nullptr;
      return self->connect_failed("cannot connect to Redis at " + self->where.address() + ": " +
                                  ac->errstr);
    }
    // AUTH and SELECT go first; commands wait for their answers, so that a refused password fails
    // them with that reason instead of letting each one answer NOAUTH.
    auto context = const_cast<redisAsyncContext*>(ac);
    if (!self->where.password.empty()) {
      ++self->setup_pending;
      redisAsyncCommand(context, &client_state::on_setup_reply, const_cast<char*>("AUTH"),
                        "AUTH %s", self->where.password.c_str());
    }
    if (self->where.db != 0) {
      ++self->setup_pending;
      redisAsyncCommand(context, &client_state::on_setup_reply, const_cast<char*>("SELECT"),
                        "SELECT %d", self->where.db);
    }
    if (self->setup_pending == 0) self->connected();
  }

  void connected() {
    connect_timer.cancel();
    current = phase::connected;
    reconnect_backoff.reset();
    auto batches = std::move(waiting);
    waiting.clear();
    for (auto& b : batches) send(b);
  }

  static void on_setup_reply(redisAsyncContext* ac, void* raw, void* privdata) {
    auto self = owner_of(ac);
    if (!self || self->current != phase::connecting) return;
    auto* r = static_cast<redisReply*>(raw);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      std::string reason = r ? std::string(r->str, r->len) : std::string(ac->errstr);
      std::string message = "Redis at " + self->where.address() + " refused " +
                            static_cast<const char*>(privdata) + ": " + reason;
      // Not from inside hiredis's callback: connect_failed frees the context.
      asio::post(self->strand, [self, message] {
        if (self->current == phase::connecting) self->connect_failed(message);
      });
      self->setup_pending = 0;
      return;
    }
    if (--self->setup_pending == 0) self->connected();
  }

  static void on_disconnect(const redisAsyncContext* ac, int status) {
    auto self = owner_of(ac);
    static_cast<connection*>(ac->data)->context = nullptr;
    if (!self) return;
    if (status != REDIS_OK && self->last_error.empty()) {
      self->last_error = "connection to Redis at " + self->where.address() + " lost: " + ac->errstr;
    }
    if (self->current == phase::connected) self->current = phase::idle;
    self->in_flight.clear();  // every pending callback has been called (with no reply) by now
    if (!self->waiting.empty() && self->current == phase::idle) {
      asio::post(self->strand, [self] {
        if (self->current == phase::idle && !self->waiting.empty()) self->connect();
      });
    }
  }

  void connect_failed(const std::string& message) {
    last_error = message;
    connect_timer.cancel();
    resolver.cancel();
    free_context();  // nothing was sent yet: no reply callbacks are pending
    current = phase::backing_off;
    fail_waiting(message);
    backoff_timer.expires_after(reconnect_backoff.next());
    backoff_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->current != phase::backing_off) return;
      self->current = phase::idle;
      if (!self->waiting.empty()) self->connect();
    });
  }

  // Tears the connection down; hiredis calls every pending reply callback with no reply, which
  // fails their pipelines with last_error.
  void abort_connection() {
    free_context();
    in_flight.clear();
    if (current == phase::connected) current = phase::idle;
    if (!waiting.empty() && current == phase::idle) connect();
  }

  struct reply_slot {
    std::shared_ptr<batch> owner_batch;
    std::size_t index;
  };

  static void on_reply(redisAsyncContext* ac, void* raw, void* privdata) {
    std::unique_ptr<reply_slot> slot(static_cast<reply_slot*>(privdata));
    auto& b = slot->owner_batch;
    auto self = owner_of(ac);
    if (b->done || !self) return;
    if (!raw) {
      std::string message =
          !self->last_error.empty() ? self->last_error
          : ac->err ? "connection to Redis at " + self->where.address() + " lost: " + ac->errstr
                    : "connection to Redis at " + self->where.address() + " closed";
      return complete(b, self->error(message), self->strand);
    }
    b->replies[slot->index] = convert(static_cast<redisReply*>(raw));
    if (--b->remaining == 0) {
      complete(b, nullptr, self->strand);
      while (!self->in_flight.empty() && self->in_flight.front()->done) self->in_flight.pop_front();
    }
  }

  void send(const std::shared_ptr<batch>& b) {
    redisAsyncContext* ac = conn ? conn->context : nullptr;
    b->replies.resize(b->commands.size());
    b->remaining = b->commands.size();
    b->deadline = clock::now() + where.command_timeout;
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (std::size_t i = 0; i < b->commands.size(); ++i) {
      const command& args = b->commands[i];
      argv.clear();
      lengths.clear();
      for (const auto& arg : args) {
        argv.push_back(arg.data());
        lengths.push_back(arg.size());
      }
      auto slot = std::make_unique<reply_slot>(reply_slot{b, i});
      if (!ac || redisAsyncCommandArgv(ac, &client_state::on_reply, slot.get(),
                                       static_cast<int>(argv.size()), argv.data(),
                                       lengths.data()) != REDIS_OK) {
        return complete(b,
                        error("cannot send a command to Redis at " + where.address() +
                              (ac && ac->err ? std::string(": ") + ac->errstr
                                             : std::string(": not connected"))),
                        strand);
      }
      slot.release();  // on_reply owns it now; hiredis calls it exactly once
    }
    in_flight.push_back(b);
    arm_command_timer();
  }

  void arm_command_timer() {
    if (command_timer_armed || in_flight.empty()) return;
    command_timer_armed = true;
    command_timer.expires_at(in_flight.front()->deadline);
    command_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      self->command_timer_armed = false;
      if (ec) return;
      while (!self->in_flight.empty() && self->in_flight.front()->done) self->in_flight.pop_front();
      if (self->in_flight.empty()) return;
      if (self->in_flight.front()->deadline <= clock::now()) {
        self->last_error = "Redis at " + self->where.address() + " did not answer within " +
                           std::to_string(self->where.command_timeout.count()) + " ms";
        self->abort_connection();
      }
      self->arm_command_timer();
    });
  }

  void close() {
    if (current == phase::closed) return;
    current = phase::closed;
    last_error = "Redis client for " + where.address() + " was closed";
    connect_timer.cancel();
    backoff_timer.cancel();
    command_timer.cancel();
    resolver.cancel();
    fail_waiting(last_error);
    free_context();
    in_flight.clear();
  }
};

std::shared_ptr<client> client::create(asio::any_io_executor executor, endpoint where) {
  // hiredis writes with write(2): a peer that went away would raise SIGPIPE and kill the crawl.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  if (!where.cluster_nodes.empty())
    return std::shared_ptr<client>(
        new client(nullptr, detail::make_cluster(std::move(executor), std::move(where))));
  return std::shared_ptr<client>(
      new client(std::make_shared<state>(std::move(executor), std::move(where)), nullptr));
}

client::client(std::shared_ptr<state> state, std::shared_ptr<detail::cluster_state> cluster)
    : state_(std::move(state)), cluster_(std::move(cluster)) {}

client::~client() {
  close();
}

const endpoint& client::where() const {
  return cluster_ ? detail::cluster_endpoint(*cluster_) : state_->where;
}

asio::any_io_executor client::get_executor() const {
  return cluster_ ? detail::cluster_executor(*cluster_) : asio::any_io_executor(state_->strand);
}

void client::start(std::vector<command> commands,
                   asio::any_completion_handler<pipeline_signature> handler) {
  if (cluster_) return detail::cluster_submit(cluster_, std::move(commands), std::move(handler));
  auto b = std::make_shared<batch>(std::move(commands), std::move(handler));
  asio::dispatch(state_->strand, [state = state_, b] { state->submit(b); });
}

void client::start_one(command args, asio::any_completion_handler<command_signature> handler) {
  auto executor = asio::get_associated_executor(handler, get_executor());
  std::vector<command> commands;
  commands.push_back(std::move(args));
  start(std::move(commands), asio::bind_executor(executor, [handler = std::move(handler)](
                                                               std::exception_ptr error,
                                                               std::vector<reply> replies) mutable {
          std::move(handler)(error, replies.empty() ? reply{} : std::move(replies.front()));
        }));
}

void client::close() {
  if (cluster_) return detail::cluster_close(cluster_);
  asio::dispatch(state_->strand, [state = state_] { state->close(); });
}

}  // namespace crawler::redis
