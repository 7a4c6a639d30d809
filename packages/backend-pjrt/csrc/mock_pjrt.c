/*
 * A mock PJRT plugin for the tests that run without a GPU. It is built by the tests with
 * `cc -shared -fPIC` against a header generated from the TypeScript declarations, so every
 * struct it reads is laid out by the C compiler from the same field lists the bindings use.
 *
 * It checks what it receives (struct_size of every args struct, field values), records calls,
 * and returns canned results so the tests can drive load, the gate, error conversion, buffers,
 * compile, serialize and execute. It never replaces the GPU tests.
 *
 * Variants, chosen at build time so each variant is its own library with its own state:
 * -DMOCK_VARIANT='"ok"' (default) | wrong_major | wrong_minor | short_table | crash_on_load |
 * null_api | no_clear_stats (an empty slot), and -DMOCK_NO_GETPJRTAPI which leaves the
 * GetPjrtApi symbol out. The environment
 * variable MOCK_PJRT_VARIANT, where set, overrides the built-in variant.
 *
 * Loads may come from several threads at once (the backend's loader threads), so every counter
 * and live-object count is updated with __atomic builtins. A module whose text holds
 * `mock.sleep_ms=<N>` sleeps N ms in compile and in every load of its serialized form, so tests
 * can see loads overlap. One holding `mock.load_sleeps=<A>,<B>,...` has its loads sleep A, B, ...
 * ms in the order they start (over all such programs, from the last mock_reset_load_sleeps), so
 * tests can make one copy of a hedged load the fast one; an entry written `!<N>` fails its load
 * after the sleep.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pjrt_gen.h"

#ifndef MOCK_VARIANT
#define MOCK_VARIANT "ok"
#endif

/* ------------------------------------------------------------ recording */

static int calls[SLOT_COUNT];
static int live_errors, live_buffers, live_events, live_executables;
static int64_t bytes_in_use, peak_bytes;
static char last_options[4096];
static size_t last_options_size;
static char client_options[1024];
static int last_semantics = -1;

#define ADD(var, n) __atomic_add_fetch(&(var), (n), __ATOMIC_SEQ_CST)
#define LOAD(var) __atomic_load_n(&(var), __ATOMIC_SEQ_CST)

static void count(int slot) { ADD(calls[slot], 1); }

/* Raises `gauge` to `value` if it is lower, without losing a concurrent raise. */
static void raise_to(int64_t* gauge, int64_t value) {
  int64_t seen = LOAD(*gauge);
  while (seen < value && !__atomic_compare_exchange_n(gauge, &seen, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
}

int mock_calls(int slot) { return slot >= 0 && slot < SLOT_COUNT ? LOAD(calls[slot]) : -1; }
int mock_live_errors(void) { return LOAD(live_errors); }
int mock_live_buffers(void) { return LOAD(live_buffers); }
int mock_live_events(void) { return LOAD(live_events); }
int mock_live_executables(void) { return LOAD(live_executables); }
int mock_last_semantics(void) { return last_semantics; }
const char* mock_client_options(void) { return client_options; }
size_t mock_last_options(void* out, size_t cap) {
  size_t n = last_options_size < cap ? last_options_size : cap;
  memcpy(out, last_options, n);
  return last_options_size;
}

/*
 * Loads: how many ran at the same time at most (since the last reset), and how many ran on a
 * thread other than the one that created the client, so tests can tell where loads happen.
 */
static int64_t loads_running, max_loads_running;
static int loads_off_client_thread;
static pthread_t client_thread;
static int client_thread_known;

int mock_max_concurrent_loads(void) { return (int)LOAD(max_loads_running); }
void mock_reset_max_concurrent_loads(void) { __atomic_store_n(&max_loads_running, 0, __ATOMIC_SEQ_CST); }
int mock_loads_off_client_thread(void) { return LOAD(loads_off_client_thread); }

/* Parses the digits at `d` (up to `end`) as milliseconds and sleeps that long. */
static void sleep_digits(const char* d, const char* end) {
  long ms = 0;
  for (; d < end && *d >= '0' && *d <= '9'; d++) ms = ms * 10 + (*d - '0');
  struct timespec delay = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&delay, &delay) != 0 && errno == EINTR) {
  }
}

/* Sleeps as long as a `mock.sleep_ms=<N>` marker in the module text asks (no marker: not at all). */
static void sleep_as_asked(const char* code, size_t size) {
  static const char marker[] = "mock.sleep_ms=";
  const char* at = memmem(code, size, marker, sizeof marker - 1);
  if (at) sleep_digits(at + sizeof marker - 1, code + size);
}

static int load_sleep_turn;
void mock_reset_load_sleeps(void) { __atomic_store_n(&load_sleep_turn, 0, __ATOMIC_SEQ_CST); }

/*
 * Sleeps this load's turn of a `mock.load_sleeps=<A>,<B>,...` list, if the program has one;
 * returns 1 when that entry says the load fails (`!<N>`).
 */
static int sleep_in_turn(const char* code, size_t size) {
  static const char marker[] = "mock.load_sleeps=";
  const char* at = memmem(code, size, marker, sizeof marker - 1);
  if (!at) return 0;
  const char* list = at + sizeof marker - 1;
  const char* end = code + size;
  int entries = 1;
  for (const char* d = list; d < end && (*d == ',' || *d == '!' || (*d >= '0' && *d <= '9')); d++) entries += *d == ',';
  int turn = (ADD(load_sleep_turn, 1) - 1) % entries;
  const char* d = list;
  for (int i = 0; i < turn; i++) d = (const char*)memchr(d, ',', (size_t)(end - d)) + 1;
  int fails = d < end && *d == '!';
  sleep_digits(d + fails, end);
  return fails;
}

/* The C compiler's own offsets and sizes, as "type.field=value;" text for the layout tests. */
const char* mock_layout(void) {
  static char text[65536];
  size_t used = 0;
  for (const mock_layout_row* r = MOCK_LAYOUT; r->type; r++) {
    used += (size_t)snprintf(text + used, sizeof text - used, "%s.%s=%zu;", r->type, r->field, r->value);
  }
  return text;
}

/* ------------------------------------------------------------ errors */

typedef struct { int code; char message[512]; } mock_error;

static void* make_error(int code, const char* fmt, ...) {
  mock_error* e = calloc(1, sizeof *e);
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  ADD(live_errors, 1);
  return e;
}

/* Every entry point first checks that the caller's struct_size is the one this layout has. */
#define CHECK(args, type)                                                                    \
  do {                                                                                       \
    if ((args)->struct_size != STRUCT_SIZE_##type)                                           \
      return make_error(3, "mock: %s.struct_size is %ld", #type, (long)(args)->struct_size); \
  } while (0)

static void error_destroy(PJRT_Error_Destroy_Args* a) {
  count(SLOT_PJRT_Error_Destroy);
  if (a->error) {
    free(a->error);
    ADD(live_errors, -1);
  }
}
static void error_message(PJRT_Error_Message_Args* a) {
  count(SLOT_PJRT_Error_Message);
  mock_error* e = a->error;
  a->message = e->message;
  a->message_size = strlen(e->message);
}
static void* error_getcode(PJRT_Error_GetCode_Args* a) {
  count(SLOT_PJRT_Error_GetCode);
  CHECK(a, PJRT_Error_GetCode_Args);
  a->code = ((mock_error*)a->error)->code;
  return NULL;
}

/* ------------------------------------------------------------ plugin */

static void* plugin_initialize(PJRT_Plugin_Initialize_Args* a) {
  count(SLOT_PJRT_Plugin_Initialize);
  CHECK(a, PJRT_Plugin_Initialize_Args);
  return NULL;
}

static PJRT_NamedValue attrs[3];
static const int64_t current_version[3] = {1, 9, 5};
static const int64_t minimum_version[3] = {0, 9, 0};

static void set_string(PJRT_NamedValue* v, const char* name, const char* value) {
  v->struct_size = STRUCT_SIZE_PJRT_NamedValue;
  v->name = (void*)name;
  v->name_size = strlen(name);
  v->type = 0;
  v->value.string_value = (void*)value;
  v->value_size = strlen(value);
}
static void set_list(PJRT_NamedValue* v, const char* name, const int64_t* values, size_t n) {
  v->struct_size = STRUCT_SIZE_PJRT_NamedValue;
  v->name = (void*)name;
  v->name_size = strlen(name);
  v->type = 2;
  v->value.int64_array_value = (void*)values;
  v->value_size = n;
}
static void set_int(PJRT_NamedValue* v, const char* name, int64_t value) {
  v->struct_size = STRUCT_SIZE_PJRT_NamedValue;
  v->name = (void*)name;
  v->name_size = strlen(name);
  v->type = 1;
  v->value.int64_value = value;
  v->value_size = 1;
}

static void* plugin_attributes(PJRT_Plugin_Attributes_Args* a) {
  count(SLOT_PJRT_Plugin_Attributes);
  CHECK(a, PJRT_Plugin_Attributes_Args);
  set_string(&attrs[0], "xla_version", "mock-xla-1");
  set_list(&attrs[1], "stablehlo_current_version", current_version, 3);
  set_list(&attrs[2], "stablehlo_minimum_version", minimum_version, 3);
  a->attributes = attrs;
  a->num_attributes = 3;
  return NULL;
}

/* ------------------------------------------------------------ events */

/*
 * Events turn ready after `polls_to_ready` IsReady polls (2 unless a test sets it), so the async
 * wait path really waits; a large value makes a wait outlast any polling and need OnReady.
 */
typedef struct { int polls; int ready; int code; char message[128]; } mock_event;
static int polls_to_ready = 2;
void mock_set_polls_to_ready(int n) { polls_to_ready = n; }

static mock_event* make_event(int code, const char* message) {
  mock_event* e = calloc(1, sizeof *e);
  e->code = code;
  if (message) snprintf(e->message, sizeof e->message, "%s", message);
  ADD(live_events, 1);
  return e;
}

static void* event_destroy(PJRT_Event_Destroy_Args* a) {
  count(SLOT_PJRT_Event_Destroy);
  CHECK(a, PJRT_Event_Destroy_Args);
  if (a->event) {
    free(a->event);
    ADD(live_events, -1);
  }
  return NULL;
}
static void* event_isready(PJRT_Event_IsReady_Args* a) {
  count(SLOT_PJRT_Event_IsReady);
  CHECK(a, PJRT_Event_IsReady_Args);
  mock_event* e = a->event;
  if (!e->ready && ++e->polls > polls_to_ready) e->ready = 1;
  a->is_ready = e->ready;
  return NULL;
}
static void* event_error(PJRT_Event_Error_Args* a) {
  count(SLOT_PJRT_Event_Error);
  CHECK(a, PJRT_Event_Error_Args);
  mock_event* e = a->event;
  if (!e->ready) return make_error(9, "mock: PJRT_Event_Error on an event that is not ready");
  return e->code ? make_error(e->code, "%s", e->message) : NULL;
}
static void* event_await(PJRT_Event_Await_Args* a) {
  count(SLOT_PJRT_Event_Await);
  CHECK(a, PJRT_Event_Await_Args);
  mock_event* e = a->event;
  e->ready = 1;
  return e->code ? make_error(e->code, "%s", e->message) : NULL;
}

/*
 * OnReady calls back from a thread of its own after a short delay, as a real plugin does from
 * its stream threads, so the threadsafe callback path is exercised.
 */
typedef void (*on_ready_fn)(void* error, void* user_arg);
typedef struct { mock_event* event; on_ready_fn callback; void* user_arg; } on_ready_job;
static int callbacks_from_other_threads;
static pthread_t js_thread;
static int js_thread_known;

int mock_callbacks_from_other_threads(void) { return LOAD(callbacks_from_other_threads); }

static void* on_ready_thread(void* p) {
  on_ready_job* job = p;
  struct timespec delay = {0, 300 * 1000};
  nanosleep(&delay, NULL);
  job->event->ready = 1;
  if (js_thread_known && !pthread_equal(pthread_self(), js_thread)) __atomic_add_fetch(&callbacks_from_other_threads, 1, __ATOMIC_SEQ_CST);
  void* error = job->event->code ? make_error(job->event->code, "%s", job->event->message) : NULL;
  job->callback(error, job->user_arg);
  free(job);
  return NULL;
}

static void* event_onready(PJRT_Event_OnReady_Args* a) {
  count(SLOT_PJRT_Event_OnReady);
  CHECK(a, PJRT_Event_OnReady_Args);
  if (!a->callback) return make_error(3, "mock: OnReady without a callback");
  js_thread = pthread_self();
  js_thread_known = 1;
  on_ready_job* job = malloc(sizeof *job);
  job->event = a->event;
  job->callback = (on_ready_fn)a->callback;
  job->user_arg = a->user_arg;
  pthread_t t;
  if (pthread_create(&t, NULL, on_ready_thread, job) != 0) {
    free(job);
    return make_error(13, "mock: pthread_create failed");
  }
  pthread_detach(t);
  return NULL;
}

/* ------------------------------------------------------------ client and devices */

static int device_token, description_token;
static void* device_list[1] = {&device_token};

/*
 * Each client counts the buffers and executables it owns, so a test can watch one backend's
 * objects while other backends' finalizers and loader threads come and go in the same process.
 * Clients live in a fixed table and are never freed: their counts stay readable after Destroy.
 */
typedef struct { int live_buffers, live_executables; } mock_client;
enum { MAX_CLIENTS = 1024 };
static mock_client clients[MAX_CLIENTS];
static int clients_created;

static mock_client* as_client(void* p) {
  mock_client* c = p;
  return c >= clients && c < clients + LOAD(clients_created) ? c : NULL;
}
int mock_clients_created(void) { return LOAD(clients_created); }
int mock_client_live_buffers(int ordinal) {
  return ordinal >= 1 && ordinal <= LOAD(clients_created) ? LOAD(clients[ordinal - 1].live_buffers) : -1;
}
int mock_client_live_executables(int ordinal) {
  return ordinal >= 1 && ordinal <= LOAD(clients_created) ? LOAD(clients[ordinal - 1].live_executables) : -1;
}

static void* client_create(PJRT_Client_Create_Args* a) {
  count(SLOT_PJRT_Client_Create);
  CHECK(a, PJRT_Client_Create_Args);
  size_t used = 0;
  client_options[0] = 0;
  const PJRT_NamedValue* v = a->create_options;
  for (size_t i = 0; i < a->num_options; i++, v++) {
    if (v->struct_size != STRUCT_SIZE_PJRT_NamedValue) return make_error(3, "mock: %s struct_size %ld", "NamedValue", (long)v->struct_size);
    char name[64] = {0};
    memcpy(name, v->name, v->name_size < 63 ? v->name_size : 63);
    char value[128] = {0};
    switch ((int)v->type) {
      case 0: snprintf(value, sizeof value, "%.*s", (int)v->value_size, (const char*)v->value.string_value); break;
      case 1: snprintf(value, sizeof value, "%lld", (long long)v->value.int64_value); break;
      case 3: snprintf(value, sizeof value, "%g", (double)v->value.float_value); break;
      case 4: snprintf(value, sizeof value, "%s", v->value.bool_value ? "true" : "false"); break;
      default: snprintf(value, sizeof value, "type%d", (int)v->type);
    }
    used += (size_t)snprintf(client_options + used, sizeof client_options - used, "%s=%s;", name, value);
  }
  int ordinal = ADD(clients_created, 1);
  if (ordinal > MAX_CLIENTS) return make_error(8, "mock: more than %ld clients", (long)MAX_CLIENTS);
  client_thread = pthread_self();
  __atomic_store_n(&client_thread_known, 1, __ATOMIC_SEQ_CST);
  a->client = &clients[ordinal - 1];
  return NULL;
}
static void* client_destroy(PJRT_Client_Destroy_Args* a) {
  count(SLOT_PJRT_Client_Destroy);
  CHECK(a, PJRT_Client_Destroy_Args);
  return NULL;
}
static void* client_platform_name(PJRT_Client_PlatformName_Args* a) {
  count(SLOT_PJRT_Client_PlatformName);
  CHECK(a, PJRT_Client_PlatformName_Args);
  a->platform_name = "mock";
  a->platform_name_size = 4;
  return NULL;
}
static void* client_platform_version(PJRT_Client_PlatformVersion_Args* a) {
  count(SLOT_PJRT_Client_PlatformVersion);
  CHECK(a, PJRT_Client_PlatformVersion_Args);
  a->platform_version = "mockrt 1.2";
  a->platform_version_size = 10;
  return NULL;
}
static void* client_devices(PJRT_Client_AddressableDevices_Args* a) {
  count(SLOT_PJRT_Client_AddressableDevices);
  CHECK(a, PJRT_Client_AddressableDevices_Args);
  if (!as_client(a->client)) return make_error(3, "mock: not the client");
  a->addressable_devices = device_list;
  a->num_addressable_devices = 1;
  return NULL;
}
static void* device_get_description(PJRT_Device_GetDescription_Args* a) {
  count(SLOT_PJRT_Device_GetDescription);
  CHECK(a, PJRT_Device_GetDescription_Args);
  if (a->device != &device_token) return make_error(3, "mock: unknown device");
  a->device_description = &description_token;
  return NULL;
}
static void* description_id(PJRT_DeviceDescription_Id_Args* a) {
  count(SLOT_PJRT_DeviceDescription_Id);
  CHECK(a, PJRT_DeviceDescription_Id_Args);
  a->id = 0;
  return NULL;
}
static void* description_kind(PJRT_DeviceDescription_Kind_Args* a) {
  count(SLOT_PJRT_DeviceDescription_Kind);
  CHECK(a, PJRT_DeviceDescription_Kind_Args);
  a->device_kind = "Mock Device";
  a->device_kind_size = 11;
  return NULL;
}
static PJRT_NamedValue device_attrs[2];
static void* description_attributes(PJRT_DeviceDescription_Attributes_Args* a) {
  count(SLOT_PJRT_DeviceDescription_Attributes);
  CHECK(a, PJRT_DeviceDescription_Attributes_Args);
  set_string(&device_attrs[0], "compute_capability", "9.0");
  set_int(&device_attrs[1], "core_count", 132);
  a->attributes = device_attrs;
  a->num_attributes = 2;
  return NULL;
}
static void* device_memory_stats(PJRT_Device_MemoryStats_Args* a) {
  count(SLOT_PJRT_Device_MemoryStats);
  CHECK(a, PJRT_Device_MemoryStats_Args);
  a->bytes_in_use = LOAD(bytes_in_use);
  a->peak_bytes_in_use = LOAD(peak_bytes);
  a->peak_bytes_in_use_is_set = true;
  a->bytes_limit = 1 << 30;
  a->bytes_limit_is_set = true;
  return NULL;
}
static void* device_clear_memory_stats(PJRT_Device_ClearMemoryStats_Args* a) {
  count(SLOT_PJRT_Device_ClearMemoryStats);
  CHECK(a, PJRT_Device_ClearMemoryStats_Args);
  __atomic_store_n(&peak_bytes, LOAD(bytes_in_use), __ATOMIC_SEQ_CST);
  return NULL;
}

/* ------------------------------------------------------------ buffers */

typedef struct { mock_client* owner; int type; int64_t dims[8]; size_t ndims; size_t size; unsigned char* data; } mock_buffer;

static size_t element_size(int type) {
  switch (type) {
    case 1: case 2: case 6: return 1;           /* PRED S8 U8 */
    case 3: case 7: case 10: case 13: return 2; /* S16 U16 F16 BF16 */
    case 4: case 8: case 11: return 4;          /* S32 U32 F32 */
    case 5: case 9: case 12: return 8;          /* S64 U64 F64 */
    default: return 0;
  }
}

static mock_buffer* make_buffer(mock_client* owner, int type, const int64_t* dims, size_t ndims) {
  mock_buffer* b = calloc(1, sizeof *b);
  b->owner = owner;
  b->type = type;
  b->ndims = ndims;
  size_t n = 1;
  for (size_t i = 0; i < ndims; i++) {
    b->dims[i] = dims[i];
    n *= (size_t)dims[i];
  }
  b->size = n * element_size(type);
  b->data = calloc(1, b->size ? b->size : 1);
  ADD(live_buffers, 1);
  ADD(owner->live_buffers, 1);
  raise_to(&peak_bytes, ADD(bytes_in_use, (int64_t)b->size));
  return b;
}

static void* buffer_from_host(PJRT_Client_BufferFromHostBuffer_Args* a) {
  count(SLOT_PJRT_Client_BufferFromHostBuffer);
  CHECK(a, PJRT_Client_BufferFromHostBuffer_Args);
  mock_client* owner = as_client(a->client);
  if (!owner) return make_error(3, "mock: upload through an unknown client");
  if (a->device != &device_token) return make_error(3, "mock: upload to an unknown device");
  if (a->num_dims > 8) return make_error(3, "mock: %s %ld dims", "too many", (long)a->num_dims);
  if (element_size(a->type) == 0) return make_error(12, "mock: %s %ld", "unsupported element type", (long)a->type);
  last_semantics = a->host_buffer_semantics;
  mock_buffer* b = make_buffer(owner, a->type, a->dims, a->num_dims);
  memcpy(b->data, a->data, b->size);
  a->buffer = b;
  a->done_with_host_buffer = make_event(0, NULL);
  return NULL;
}
static void* buffer_destroy(PJRT_Buffer_Destroy_Args* a) {
  count(SLOT_PJRT_Buffer_Destroy);
  CHECK(a, PJRT_Buffer_Destroy_Args);
  mock_buffer* b = a->buffer;
  if (b) {
    ADD(bytes_in_use, -(int64_t)b->size);
    ADD(b->owner->live_buffers, -1);
    free(b->data);
    free(b);
    ADD(live_buffers, -1);
  }
  return NULL;
}
static void* buffer_element_type(PJRT_Buffer_ElementType_Args* a) {
  count(SLOT_PJRT_Buffer_ElementType);
  CHECK(a, PJRT_Buffer_ElementType_Args);
  a->type = ((mock_buffer*)a->buffer)->type;
  return NULL;
}
static void* buffer_dimensions(PJRT_Buffer_Dimensions_Args* a) {
  count(SLOT_PJRT_Buffer_Dimensions);
  CHECK(a, PJRT_Buffer_Dimensions_Args);
  mock_buffer* b = a->buffer;
  a->dims = b->dims;
  a->num_dims = b->ndims;
  return NULL;
}
static void* buffer_device_size(PJRT_Buffer_OnDeviceSizeInBytes_Args* a) {
  count(SLOT_PJRT_Buffer_OnDeviceSizeInBytes);
  CHECK(a, PJRT_Buffer_OnDeviceSizeInBytes_Args);
  a->on_device_size_in_bytes = ((mock_buffer*)a->buffer)->size;
  return NULL;
}
static void* buffer_to_host(PJRT_Buffer_ToHostBuffer_Args* a) {
  count(SLOT_PJRT_Buffer_ToHostBuffer);
  CHECK(a, PJRT_Buffer_ToHostBuffer_Args);
  mock_buffer* b = a->src;
  if (!a->dst) {
    a->dst_size = b->size;
    return NULL;
  }
  if (a->dst_size < b->size) return make_error(3, "mock: %s %ld bytes", "dst too small for", (long)b->size);
  memcpy(a->dst, b->data, b->size);
  a->event = make_event(0, NULL);
  return NULL;
}

/* ------------------------------------------------------------ executables */

typedef struct { mock_client* owner; char* code; size_t code_size; int loaded; } mock_exec;

static mock_exec* make_exec(mock_client* owner, const char* code, size_t size) {
  mock_exec* e = calloc(1, sizeof *e);
  e->owner = owner;
  e->code = malloc(size + 1);
  memcpy(e->code, code, size);
  e->code[size] = 0;
  e->code_size = size;
  ADD(live_executables, 1);
  ADD(owner->live_executables, 1);
  return e;
}

static void* client_compile(PJRT_Client_Compile_Args* a) {
  count(SLOT_PJRT_Client_Compile);
  CHECK(a, PJRT_Client_Compile_Args);
  if (!as_client(a->client)) return make_error(3, "mock: compile through an unknown client");
  const PJRT_Program* p = a->program;
  if (p->struct_size != STRUCT_SIZE_PJRT_Program) return make_error(3, "mock: %s %ld", "PJRT_Program.struct_size", (long)p->struct_size);
  if (p->format_size != 4 || memcmp(p->format, "mlir", 4) != 0) return make_error(3, "mock: program format is not mlir");
  /* XLA aborts the whole process on empty compile options; so does the mock. */
  if (a->compile_options_size == 0) {
    fprintf(stderr, "mock compiler: Check failed: replica_count > 0\n");
    abort();
  }
  last_options_size = a->compile_options_size;
  memcpy(last_options, a->compile_options, a->compile_options_size < sizeof last_options ? a->compile_options_size : sizeof last_options);
  char* code = p->code;
  if (memmem(code, p->code_size, "mock.crash", 10)) {
    fprintf(stderr, "mock compiler: Check failed: the module asked to crash\n");
    abort();
  }
  if (memmem(code, p->code_size, "mock.fail", 9)) return make_error(3, "mock: cannot parse %s at line %ld", "module", 1L);
  sleep_as_asked(code, p->code_size);
  mock_exec* e = make_exec(as_client(a->client), code, p->code_size);
  e->loaded = 1;
  a->executable = e;
  return NULL;
}
/* Loaded and unloaded executables are the same mock object; both Destroy calls free it. */
static void free_exec(mock_exec* e) {
  if (!e) return;
  ADD(e->owner->live_executables, -1);
  free(e->code);
  free(e);
  ADD(live_executables, -1);
}
static void* loaded_destroy(PJRT_LoadedExecutable_Destroy_Args* a) {
  count(SLOT_PJRT_LoadedExecutable_Destroy);
  CHECK(a, PJRT_LoadedExecutable_Destroy_Args);
  free_exec(a->executable);
  return NULL;
}
static void* loaded_get_executable(PJRT_LoadedExecutable_GetExecutable_Args* a) {
  count(SLOT_PJRT_LoadedExecutable_GetExecutable);
  CHECK(a, PJRT_LoadedExecutable_GetExecutable_Args);
  mock_exec* l = a->loaded_executable;
  mock_exec* e = make_exec(l->owner, l->code, l->code_size);
  a->executable = e;
  return NULL;
}
static void* executable_destroy(PJRT_Executable_Destroy_Args* a) {
  count(SLOT_PJRT_Executable_Destroy);
  CHECK(a, PJRT_Executable_Destroy_Args);
  free_exec(a->executable);
  return NULL;
}
static void* executable_num_outputs(PJRT_Executable_NumOutputs_Args* a) {
  count(SLOT_PJRT_Executable_NumOutputs);
  CHECK(a, PJRT_Executable_NumOutputs_Args);
  a->num_outputs = 2;
  return NULL;
}

static void free_serialized(void* p) { free(p); }

static void* executable_serialize(PJRT_Executable_Serialize_Args* a) {
  count(SLOT_PJRT_Executable_Serialize);
  CHECK(a, PJRT_Executable_Serialize_Args);
  const mock_exec* e = a->executable;
  char* bytes = malloc(e->code_size + 9);
  memcpy(bytes, "MOCKEXEC:", 9);
  memcpy(bytes + 9, e->code, e->code_size);
  a->serialized_bytes = bytes;
  a->serialized_bytes_size = e->code_size + 9;
  a->serialized_executable = bytes;
  a->serialized_executable_deleter = (void*)free_serialized;
  return NULL;
}
static void* deserialize_and_load(PJRT_Executable_DeserializeAndLoad_Args* a) {
  count(SLOT_PJRT_Executable_DeserializeAndLoad);
  CHECK(a, PJRT_Executable_DeserializeAndLoad_Args);
  if (!as_client(a->client)) return make_error(3, "mock: load through an unknown client");
  if (LOAD(client_thread_known) && !pthread_equal(pthread_self(), client_thread)) ADD(loads_off_client_thread, 1);
  raise_to(&max_loads_running, ADD(loads_running, 1));
  void* result = NULL;
  const char* s = a->serialized_executable;
  if (a->serialized_executable_size < 9 || memcmp(s, "MOCKEXEC:", 9) != 0) {
    result = make_error(15, "mock: %s (%ld bytes)", "not a serialized mock executable", (long)a->serialized_executable_size);
  } else {
    sleep_as_asked(s + 9, a->serialized_executable_size - 9);
    if (sleep_in_turn(s + 9, a->serialized_executable_size - 9)) {
      result = make_error(13, "mock: %s", "this load's turn fails");
    } else {
      mock_exec* e = make_exec(as_client(a->client), s + 9, a->serialized_executable_size - 9);
      e->loaded = 1;
      a->loaded_executable = e;
    }
  }
  ADD(loads_running, -1);
  return result;
}

/*
 * Canned execution: output 0 is f32 shaped like argument 0, element i the sum over arguments j
 * of arg_j[i % len_j] (all f32); output 1 is an s32 [1] holding the number of arguments.
 */
static void* execute(PJRT_LoadedExecutable_Execute_Args* a) {
  count(SLOT_PJRT_LoadedExecutable_Execute);
  CHECK(a, PJRT_LoadedExecutable_Execute_Args);
  const PJRT_ExecuteOptions* o = a->options;
  if (!o || o->struct_size != STRUCT_SIZE_PJRT_ExecuteOptions) return make_error(3, "mock: %s %ld", "PJRT_ExecuteOptions.struct_size", o ? (long)o->struct_size : -1L);
  if (a->num_devices != 1) return make_error(3, "mock: %s %ld", "num_devices", (long)a->num_devices);
  if (a->num_args == 0) return make_error(3, "mock: no arguments");
  mock_buffer* const* args = ((mock_buffer* const* const*)a->argument_lists)[0];
  for (size_t j = 0; j < a->num_args; j++) {
    if (!args[j] || args[j]->type != 11) return make_error(3, "mock: argument %ld is not f32", (long)j);
  }
  const mock_exec* program = a->executable;
  mock_buffer* out0 = make_buffer(program->owner, 11, args[0]->dims, args[0]->ndims);
  float* dst = (float*)out0->data;
  size_t n = out0->size / 4;
  for (size_t i = 0; i < n; i++) {
    float s = 0;
    for (size_t j = 0; j < a->num_args; j++) {
      size_t len = args[j]->size / 4;
      if (len) s += ((float*)args[j]->data)[i % len];
    }
    dst[i] = s;
  }
  int64_t one = 1;
  mock_buffer* out1 = make_buffer(program->owner, 4, &one, 1);
  *(int32_t*)out1->data = (int32_t)a->num_args;
  mock_buffer** outputs = ((mock_buffer** const*)a->output_lists)[0];
  outputs[0] = out0;
  outputs[1] = out1;
  int fail = memmem(program->code, program->code_size, "mock.execfail", 13) != NULL;
  if (a->device_complete_events) {
    ((void**)a->device_complete_events)[0] = make_event(fail ? 13 : 0, fail ? "mock: the device reported a failure" : NULL);
  }
  return NULL;
}

/* ------------------------------------------------------------ the table */

static API_TABLE_TYPE api;
static const API_TABLE_TYPE* api_answer;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/*
 * Fills the table once, as a real plugin's GetPjrtApi returns one static table: every thread that
 * opens the plugin calls GetPjrtApi again, and rewriting the table then would race with the
 * threads already calling through it.
 */
static void build_api(void) {
  const char* variant = getenv("MOCK_PJRT_VARIANT");
  if (!variant) variant = MOCK_VARIANT;
  if (strcmp(variant, "crash_on_load") == 0) {
    fprintf(stderr, "mock plugin: crashing on load as asked\n");
    abort();
  }
  if (strcmp(variant, "null_api") == 0) return;
  memset(&api, 0, sizeof api);
  api.struct_size = STRUCT_SIZE_PJRT_Api_0_113;
  api.pjrt_api_version.struct_size = STRUCT_SIZE_PJRT_Api_Version;
  api.pjrt_api_version.major_version = 0;
  api.pjrt_api_version.minor_version = 115;
  if (strcmp(variant, "wrong_major") == 0) api.pjrt_api_version.major_version = 1;
  if (strcmp(variant, "wrong_minor") == 0) api.pjrt_api_version.minor_version = 90;
  if (strcmp(variant, "short_table") == 0) api.struct_size = STRUCT_SIZE_PJRT_Api_0_113 - 8 * 20;
  api.PJRT_Error_Destroy = (void*)error_destroy;
  api.PJRT_Error_Message = (void*)error_message;
  api.PJRT_Error_GetCode = (void*)error_getcode;
  api.PJRT_Plugin_Initialize = (void*)plugin_initialize;
  api.PJRT_Plugin_Attributes = (void*)plugin_attributes;
  api.PJRT_Event_Destroy = (void*)event_destroy;
  api.PJRT_Event_IsReady = (void*)event_isready;
  api.PJRT_Event_Error = (void*)event_error;
  api.PJRT_Event_Await = (void*)event_await;
  api.PJRT_Event_OnReady = (void*)event_onready;
  api.PJRT_Client_Create = (void*)client_create;
  api.PJRT_Client_Destroy = (void*)client_destroy;
  api.PJRT_Client_PlatformName = (void*)client_platform_name;
  api.PJRT_Client_PlatformVersion = (void*)client_platform_version;
  api.PJRT_Client_AddressableDevices = (void*)client_devices;
  api.PJRT_Client_Compile = (void*)client_compile;
  api.PJRT_Client_BufferFromHostBuffer = (void*)buffer_from_host;
  api.PJRT_DeviceDescription_Id = (void*)description_id;
  api.PJRT_DeviceDescription_Attributes = (void*)description_attributes;
  api.PJRT_DeviceDescription_Kind = (void*)description_kind;
  api.PJRT_Device_GetDescription = (void*)device_get_description;
  api.PJRT_Device_MemoryStats = (void*)device_memory_stats;
  /* A plugin may leave slots empty; "no_clear_stats" leaves this one out. */
  if (strcmp(variant, "no_clear_stats") != 0) api.PJRT_Device_ClearMemoryStats = (void*)device_clear_memory_stats;
  api.PJRT_Executable_Destroy = (void*)executable_destroy;
  api.PJRT_Executable_NumOutputs = (void*)executable_num_outputs;
  api.PJRT_Executable_Serialize = (void*)executable_serialize;
  api.PJRT_Executable_DeserializeAndLoad = (void*)deserialize_and_load;
  api.PJRT_LoadedExecutable_Destroy = (void*)loaded_destroy;
  api.PJRT_LoadedExecutable_GetExecutable = (void*)loaded_get_executable;
  api.PJRT_LoadedExecutable_Execute = (void*)execute;
  api.PJRT_Buffer_Destroy = (void*)buffer_destroy;
  api.PJRT_Buffer_ElementType = (void*)buffer_element_type;
  api.PJRT_Buffer_Dimensions = (void*)buffer_dimensions;
  api.PJRT_Buffer_ToHostBuffer = (void*)buffer_to_host;
  api.PJRT_Buffer_OnDeviceSizeInBytes = (void*)buffer_device_size;
  api_answer = &api;
}

#ifndef MOCK_NO_GETPJRTAPI
const API_TABLE_TYPE* GetPjrtApi(void) {
#else
const API_TABLE_TYPE* NotGetPjrtApi(void) {
#endif
  pthread_once(&api_once, build_api);
  return api_answer;
}
