/*
 * A small stand-in for the RedisBloom module, for tests: Debian ships no RedisBloom. Loaded into
 * Debian's redis-server with --loadmodule, it answers BF.RESERVE, BF.ADD, BF.MADD, BF.EXISTS,
 * BF.MEXISTS, BF.INFO and BF.CARD with the replies and error texts recorded from RedisBloom 2.4
 * in shared/REDISBLOOM.md, and keys report TYPE "MBbloom--". Filters scale as RedisBloom's do: a
 * chain of sub-filters, the first at half the error rate, each new one `expansion` times larger at
 * half the previous rate; an add checks every sub-filter and inserts into the newest.
 *
 * Debian's redis-server ships no redismodule.h either, so the few module API entry points used are
 * declared below and fetched by name through RedisModule_GetApi, as the module ABI defines.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleDigest RedisModuleDigest;
typedef int (*command_func)(RedisModuleCtx *, RedisModuleString **, int);

typedef struct {
  uint64_t version; /* 1: only the fields below are read */
  void *(*rdb_load)(RedisModuleIO *, int);
  void (*rdb_save)(RedisModuleIO *, void *);
  void (*aof_rewrite)(RedisModuleIO *, RedisModuleString *, void *);
  size_t (*mem_usage)(const void *);
  void (*digest)(RedisModuleDigest *, void *);
  void (*free)(void *);
} type_methods;

enum { MODULE_OK = 0, MODULE_ERR = 1, KEY_READ = 1, KEY_WRITE = 2, KEYTYPE_EMPTY = 0, APIVER_1 = 1 };

static int (*GetApi)(const char *, void *);
static int (*SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*CreateCommand)(RedisModuleCtx *, const char *, command_func, const char *, int, int, int);
static RedisModuleType *(*CreateDataType)(RedisModuleCtx *, const char *, int, type_methods *);
static RedisModuleKey *(*OpenKey)(RedisModuleCtx *, RedisModuleString *, int);
static void (*CloseKey)(RedisModuleKey *);
static int (*KeyType)(RedisModuleKey *);
static RedisModuleType *(*ModuleTypeGetType)(RedisModuleKey *);
static void *(*ModuleTypeGetValue)(RedisModuleKey *);
static int (*ModuleTypeSetValue)(RedisModuleKey *, RedisModuleType *, void *);
static int (*ReplyWithError)(RedisModuleCtx *, const char *);
static int (*ReplyWithLongLong)(RedisModuleCtx *, long long);
static int (*ReplyWithSimpleString)(RedisModuleCtx *, const char *);
static int (*ReplyWithArray)(RedisModuleCtx *, long);
static int (*ReplyWithNull)(RedisModuleCtx *);
static const char *(*StringPtrLen)(const RedisModuleString *, size_t *);
static int (*StringToLongLong)(const RedisModuleString *, long long *);
static int (*StringToDouble)(const RedisModuleString *, double *);
static int (*ReplicateVerbatim)(RedisModuleCtx *);
static void (*SaveUnsigned)(RedisModuleIO *, uint64_t);
static uint64_t (*LoadUnsigned)(RedisModuleIO *);
static void (*SaveDouble)(RedisModuleIO *, double);
static double (*LoadDouble)(RedisModuleIO *);
static void (*SaveStringBuffer)(RedisModuleIO *, const char *, size_t);
static char *(*LoadStringBuffer)(RedisModuleIO *, size_t *);
static void (*Free)(void *);

static RedisModuleType *bloom_type;

/* ---- the filter ---- */

typedef struct {
  uint64_t capacity, items, bits;
  double error;
  uint32_t hashes;
  uint64_t *words;
} sub_filter;

typedef struct {
  uint32_t count;
  uint32_t expansion; /* 0: NONSCALING */
  sub_filter *filters;
} chain;

static void sub_filter_init(sub_filter *f, uint64_t capacity, double error) {
  double per_item = -log(error) / (M_LN2 * M_LN2);
  f->capacity = capacity;
  f->error = error;
  f->items = 0;
  f->bits = ((uint64_t)ceil((double)capacity * per_item) + 63) / 64 * 64;
  f->hashes = (uint32_t)ceil(M_LN2 * per_item);
  f->words = calloc(f->bits / 64, sizeof(uint64_t));
}

static chain *chain_new(uint64_t capacity, double error, uint32_t expansion) {
  chain *c = calloc(1, sizeof *c);
  c->expansion = expansion;
  c->count = 1;
  c->filters = calloc(1, sizeof(sub_filter));
  /* A scaling chain keeps half the rate for the sub-filters that may follow. */
  sub_filter_init(&c->filters[0], capacity, expansion ? error / 2 : error);
  return c;
}

static void chain_free(void *value) {
  chain *c = value;
  for (uint32_t i = 0; i < c->count; ++i) free(c->filters[i].words);
  free(c->filters);
  free(c);
}

static void hash_item(const char *data, size_t length, uint64_t *h1, uint64_t *h2) {
  uint64_t a = 0xcbf29ce484222325ULL, b = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < length; ++i) {
    a = (a ^ (unsigned char)data[i]) * 0x100000001b3ULL;
    b = (b ^ (unsigned char)data[i]) * 0xff51afd7ed558ccdULL;
    b ^= b >> 29;
  }
  a ^= a >> 33; a *= 0xc4ceb9fe1a85ec53ULL; a ^= a >> 33;
  b ^= b >> 31; b *= 0x94d049bb133111ebULL; b ^= b >> 32;
  *h1 = a;
  *h2 = b | 1;
}

static int sub_filter_has(const sub_filter *f, uint64_t h1, uint64_t h2) {
  for (uint32_t i = 0; i < f->hashes; ++i) {
    uint64_t bit = (h1 + i * h2) % f->bits;
    if (!(f->words[bit / 64] & (1ULL << (bit % 64)))) return 0;
  }
  return 1;
}

static void sub_filter_set(sub_filter *f, uint64_t h1, uint64_t h2) {
  for (uint32_t i = 0; i < f->hashes; ++i) {
    uint64_t bit = (h1 + i * h2) % f->bits;
    f->words[bit / 64] |= 1ULL << (bit % 64);
  }
  f->items++;
}

static int chain_has(const chain *c, const char *item, size_t length) {
  uint64_t h1, h2;
  hash_item(item, length, &h1, &h2);
  for (uint32_t i = c->count; i-- > 0;) {
    if (sub_filter_has(&c->filters[i], h1, h2)) return 1;
  }
  return 0;
}

/* 1: added, 0: already present, -1: a full NONSCALING filter. */
static int chain_add(chain *c, const char *item, size_t length) {
  if (chain_has(c, item, length)) return 0;
  sub_filter *newest = &c->filters[c->count - 1];
  if (newest->items >= newest->capacity) {
    if (!c->expansion) return -1;
    c->filters = realloc(c->filters, (c->count + 1) * sizeof(sub_filter));
    sub_filter *previous = &c->filters[c->count - 1];
    sub_filter_init(&c->filters[c->count], previous->capacity * c->expansion, previous->error / 2);
    c->count++;
    newest = &c->filters[c->count - 1];
  }
  uint64_t h1, h2;
  hash_item(item, length, &h1, &h2);
  sub_filter_set(newest, h1, h2);
  return 1;
}

static uint64_t chain_capacity(const chain *c) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < c->count; ++i) total += c->filters[i].capacity;
  return total;
}

static uint64_t chain_items(const chain *c) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < c->count; ++i) total += c->filters[i].items;
  return total;
}

static uint64_t chain_size(const chain *c) {
  uint64_t total = sizeof *c;
  for (uint32_t i = 0; i < c->count; ++i) total += sizeof(sub_filter) + c->filters[i].bits / 8;
  return total;
}

/* ---- persistence ---- */

static void rdb_save(RedisModuleIO *io, void *value) {
  chain *c = value;
  SaveUnsigned(io, c->count);
  SaveUnsigned(io, c->expansion);
  for (uint32_t i = 0; i < c->count; ++i) {
    sub_filter *f = &c->filters[i];
    SaveUnsigned(io, f->capacity);
    SaveUnsigned(io, f->items);
    SaveUnsigned(io, f->bits);
    SaveUnsigned(io, f->hashes);
    SaveDouble(io, f->error);
    SaveStringBuffer(io, (const char *)f->words, f->bits / 8);
  }
}

static void *rdb_load(RedisModuleIO *io, int encver) {
  (void)encver;
  chain *c = calloc(1, sizeof *c);
  c->count = (uint32_t)LoadUnsigned(io);
  c->expansion = (uint32_t)LoadUnsigned(io);
  c->filters = calloc(c->count, sizeof(sub_filter));
  for (uint32_t i = 0; i < c->count; ++i) {
    sub_filter *f = &c->filters[i];
    f->capacity = LoadUnsigned(io);
    f->items = LoadUnsigned(io);
    f->bits = LoadUnsigned(io);
    f->hashes = (uint32_t)LoadUnsigned(io);
    f->error = LoadDouble(io);
    size_t length = 0;
    char *buffer = LoadStringBuffer(io, &length);
    f->words = calloc(f->bits / 64, sizeof(uint64_t));
    memcpy(f->words, buffer, length < f->bits / 8 ? length : f->bits / 8);
    Free(buffer);
  }
  return c;
}

static size_t mem_usage(const void *value) { return (size_t)chain_size(value); }

/* ---- commands ---- */

static const char wrong_type[] = "WRONGTYPE Operation against a key holding the wrong kind of value";

static int arity_error(RedisModuleCtx *ctx, const char *name) {
  char message[128];
  snprintf(message, sizeof message, "ERR wrong number of arguments for '%s' command", name);
  return ReplyWithError(ctx, message);
}

/* Opens `name`; *out is the chain or NULL for an empty key. Returns 0 when the key holds another type. */
static int open_chain(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key, chain **out) {
  *key = OpenKey(ctx, name, mode);
  *out = NULL;
  if (KeyType(*key) == KEYTYPE_EMPTY) return 1;
  if (ModuleTypeGetType(*key) != bloom_type) return 0;
  *out = ModuleTypeGetValue(*key);
  return 1;
}

static int bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc < 4) return arity_error(ctx, "bf.reserve");
  double error;
  long long capacity, expansion = 2;
  int nonscaling = 0, has_expansion = 0;
  if (StringToDouble(argv[2], &error) != MODULE_OK) return ReplyWithError(ctx, "ERR bad error rate");
  if (!(error > 0 && error < 1)) return ReplyWithError(ctx, "ERR (0 < error rate range < 1) ");
  if (StringToLongLong(argv[3], &capacity) != MODULE_OK) return ReplyWithError(ctx, "ERR bad capacity");
  if (capacity <= 0) return ReplyWithError(ctx, "ERR (capacity should be larger than 0)");
  for (int i = 4; i < argc; ++i) {
    size_t length;
    const char *option = StringPtrLen(argv[i], &length);
    if (strcasecmp(option, "NONSCALING") == 0) {
      nonscaling = 1;
    } else if (strcasecmp(option, "EXPANSION") == 0) {
      if (i + 1 >= argc) return ReplyWithError(ctx, "ERR no expansion");
      if (StringToLongLong(argv[++i], &expansion) != MODULE_OK || expansion < 1) {
        return ReplyWithError(ctx, "ERR bad expansion");
      }
      has_expansion = 1;
    } else {
      return ReplyWithError(ctx, "ERR unknown argument received");
    }
  }
  if (nonscaling && has_expansion) return ReplyWithError(ctx, "Nonscaling filters cannot expand");
  RedisModuleKey *key;
  chain *c;
  int typed = open_chain(ctx, argv[1], KEY_READ | KEY_WRITE, &key, &c);
  int result;
  if (!typed) {
    result = ReplyWithError(ctx, wrong_type);
  } else if (c || KeyType(key) != KEYTYPE_EMPTY) {
    result = ReplyWithError(ctx, "ERR item exists");
  } else {
    ModuleTypeSetValue(key, bloom_type, chain_new((uint64_t)capacity, error, nonscaling ? 0 : (uint32_t)expansion));
    ReplicateVerbatim(ctx);
    result = ReplyWithSimpleString(ctx, "OK");
  }
  CloseKey(key);
  return result;
}

/* BF.ADD and BF.MADD: a missing key is created with capacity 100, error 0.01, expansion 2. */
static int add_items(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int many) {
  RedisModuleKey *key;
  chain *c;
  if (!open_chain(ctx, argv[1], KEY_READ | KEY_WRITE, &key, &c)) {
    CloseKey(key);
    return ReplyWithError(ctx, wrong_type);
  }
  if (!c) {
    c = chain_new(100, 0.01, 2);
    ModuleTypeSetValue(key, bloom_type, c);
  }
  int count = argc - 2, answered = 0, changed = 0;
  int *results = calloc((size_t)count, sizeof(int));
  for (; answered < count; ++answered) {
    size_t length;
    const char *item = StringPtrLen(argv[2 + answered], &length);
    results[answered] = chain_add(c, item, length);
    if (results[answered] == 1) changed = 1;
    if (results[answered] < 0) {
      ++answered;
      break;  /* the rest of the items are not tried */
    }
  }
  if (many) ReplyWithArray(ctx, answered);
  for (int i = 0; i < answered; ++i) {
    if (results[i] < 0) {
      ReplyWithError(ctx, "ERR non scaling filter is full");
    } else {
      ReplyWithLongLong(ctx, results[i]);
    }
  }
  free(results);
  if (changed) ReplicateVerbatim(ctx);
  CloseKey(key);
  return MODULE_OK;
}

static int bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc != 3) return arity_error(ctx, "bf.add");
  return add_items(ctx, argv, argc, 0);
}

static int bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc < 3) return arity_error(ctx, "bf.madd");
  return add_items(ctx, argv, argc, 1);
}

/* BF.EXISTS and BF.MEXISTS: a missing key, or one of another type, answers 0. */
static int exists_items(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int many) {
  RedisModuleKey *key;
  chain *c;
  open_chain(ctx, argv[1], KEY_READ, &key, &c);
  if (many) ReplyWithArray(ctx, argc - 2);
  for (int i = 2; i < argc; ++i) {
    size_t length;
    const char *item = StringPtrLen(argv[i], &length);
    ReplyWithLongLong(ctx, c ? chain_has(c, item, length) : 0);
  }
  CloseKey(key);
  return MODULE_OK;
}

static int bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc != 3) return arity_error(ctx, "bf.exists");
  return exists_items(ctx, argv, argc, 0);
}

static int bf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc < 3) return arity_error(ctx, "bf.mexists");
  return exists_items(ctx, argv, argc, 1);
}

static int bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc != 2 && argc != 3) return arity_error(ctx, "bf.info");
  RedisModuleKey *key;
  chain *c;
  int typed = open_chain(ctx, argv[1], KEY_READ, &key, &c);
  CloseKey(key);
  if (!typed) return ReplyWithError(ctx, wrong_type);
  if (!c) return ReplyWithError(ctx, "ERR not found");
  static const char *labels[] = {"Capacity", "Size", "Number of filters", "Number of items inserted",
                                 "Expansion rate"};
  static const char *fields[] = {"CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"};
  long long values[] = {(long long)chain_capacity(c), (long long)chain_size(c), c->count,
                        (long long)chain_items(c), c->expansion};
  if (argc == 3) {
    size_t length;
    const char *field = StringPtrLen(argv[2], &length);
    for (int i = 0; i < 5; ++i) {
      if (strcasecmp(field, fields[i]) != 0) continue;
      ReplyWithArray(ctx, 1);
      if (i == 4 && !c->expansion) return ReplyWithNull(ctx);
      return ReplyWithLongLong(ctx, values[i]);
    }
    return ReplyWithError(ctx, "ERR Invalid information value");
  }
  ReplyWithArray(ctx, 10);
  for (int i = 0; i < 5; ++i) {
    ReplyWithSimpleString(ctx, labels[i]);
    if (i == 4 && !c->expansion) {
      ReplyWithNull(ctx);
    } else {
      ReplyWithLongLong(ctx, values[i]);
    }
  }
  return MODULE_OK;
}

static int bf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  if (argc != 2) return arity_error(ctx, "bf.card");
  RedisModuleKey *key;
  chain *c;
  int typed = open_chain(ctx, argv[1], KEY_READ, &key, &c);
  CloseKey(key);
  if (!typed) return ReplyWithError(ctx, wrong_type);
  return ReplyWithLongLong(ctx, c ? (long long)chain_items(c) : 0);
}

#define FETCH(name)                                                   \
  if (GetApi("RedisModule_" #name, (void *)&name) != MODULE_OK) {     \
    return MODULE_ERR;                                                \
  }

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
  (void)argv;
  (void)argc;
  GetApi = (int (*)(const char *, void *))((void **)ctx)[0];
  FETCH(SetModuleAttribs) FETCH(CreateCommand) FETCH(CreateDataType) FETCH(OpenKey) FETCH(CloseKey)
  FETCH(KeyType) FETCH(ModuleTypeGetType) FETCH(ModuleTypeGetValue) FETCH(ModuleTypeSetValue)
  FETCH(ReplyWithError) FETCH(ReplyWithLongLong) FETCH(ReplyWithSimpleString) FETCH(ReplyWithArray)
  FETCH(ReplyWithNull) FETCH(StringPtrLen) FETCH(StringToLongLong) FETCH(StringToDouble)
  FETCH(ReplicateVerbatim) FETCH(SaveUnsigned) FETCH(LoadUnsigned) FETCH(SaveDouble) FETCH(LoadDouble)
  FETCH(SaveStringBuffer) FETCH(LoadStringBuffer) FETCH(Free)
  SetModuleAttribs(ctx, "bf", 20423, APIVER_1);

  type_methods methods = {1, rdb_load, rdb_save, NULL, mem_usage, NULL, chain_free};
  bloom_type = CreateDataType(ctx, "MBbloom--", 0, &methods);
  if (!bloom_type) return MODULE_ERR;

  struct {
    const char *name;
    command_func func;
    const char *flags;
  } commands[] = {
      {"bf.reserve", bf_reserve, "write deny-oom"}, {"bf.add", bf_add, "write deny-oom"},
      {"bf.madd", bf_madd, "write deny-oom"},       {"bf.exists", bf_exists, "readonly"},
      {"bf.mexists", bf_mexists, "readonly"},       {"bf.info", bf_info, "readonly"},
      {"bf.card", bf_card, "readonly"},
  };
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i) {
    if (CreateCommand(ctx, commands[i].name, commands[i].func, commands[i].flags, 1, 1, 1) != MODULE_OK) {
      return MODULE_ERR;
    }
  }
  return MODULE_OK;
}
