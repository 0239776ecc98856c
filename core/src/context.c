/*
 * Invoke contexts and the host thread pool behind ThreadPool_Schedule.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

static void* pool_worker(void* arg) {
  ccshim__pool* pool = arg;
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (pool->head == NULL && !pool->stopping) pthread_cond_wait(&pool->ready, &pool->mu);
    if (pool->head == NULL) break; /* stopping, and the queue is drained */
    ccshim__task* t = pool->head;
    pool->head = t->next;
    if (pool->head == NULL) pool->tail = NULL;
    pthread_mutex_unlock(&pool->mu);
    t->fn(t->data);
    free(t);
    pthread_mutex_lock(&pool->mu);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

static void pool_free(ccshim__pool* pool, int started) {
  pthread_mutex_lock(&pool->mu);
  pool->stopping = 1;
  pthread_cond_broadcast(&pool->ready);
  pthread_mutex_unlock(&pool->mu);
  for (int i = 0; i < started; i++) pthread_join(pool->threads[i], NULL);
  pthread_mutex_destroy(&pool->mu);
  pthread_cond_destroy(&pool->ready);
  free(pool);
}

static ccshim_status pool_new(int num_threads, ccshim__pool** out) {
  ccshim__pool* pool = calloc(1, sizeof *pool + (size_t)num_threads * sizeof(pthread_t));
  if (pool == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->ready, NULL);
  pool->num_threads = num_threads;
  for (int i = 0; i < num_threads; i++) {
    if (pthread_create(&pool->threads[i], NULL, pool_worker, pool) != 0) {
      pool_free(pool, i);
      return ccshim__fail(CCSHIM_ENOMEM, "could not start thread %d of %d", i, num_threads);
    }
  }
  *out = pool;
  return CCSHIM_OK;
}

int ccshim__pool_schedule(ccshim__pool* pool, XLA_FFI_Task* fn, void* data) {
  ccshim__task* t = malloc(sizeof *t);
  if (t == NULL) return -1;
  t->next = NULL;
  t->fn = fn;
  t->data = data;
  pthread_mutex_lock(&pool->mu);
  if (pool->tail)
    pool->tail->next = t;
  else
    pool->head = t;
  pool->tail = t;
  pthread_cond_signal(&pool->ready);
  pthread_mutex_unlock(&pool->mu);
  return 0;
}

/* The struct_size of the first versioned ccshim_context_options. */
#define CONTEXT_OPTIONS_MIN_SIZE CCSHIM_STRUCT_SIZE(ccshim_context_options, alloc_user)

ccshim_status ccshim_context_new(const ccshim_context_options* opts, ccshim_context** out) {
  if (out == NULL) return ccshim__fail(CCSHIM_EINVAL, "ccshim_context_new: out is NULL");
  *out = NULL;
  ccshim_context_options given;
  ccshim_status st = ccshim__read_options(&given, CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE, opts,
                                          CONTEXT_OPTIONS_MIN_SIZE, "ccshim_context_options",
                                          "CCSHIM_CONTEXT_OPTIONS_INIT");
  if (st != CCSHIM_OK) return st;
  opts = &given;
  if (opts->num_threads < 0 || opts->num_threads > 1024)
    return ccshim__fail(CCSHIM_EINVAL, "context: num_threads is %d; expected 0..1024",
                        opts->num_threads);
  if ((opts->alloc == NULL) != (opts->free == NULL))
    return ccshim__fail(CCSHIM_EINVAL, "context: give both alloc and free, or neither");
  const char* platform = opts->platform ? opts->platform : "host";
  char canonical[64];
  if (strlen(platform) >= sizeof canonical - 48)
    return ccshim__fail(CCSHIM_EINVAL, "context: platform name too long");
  ccshim_canonical_platform(platform, canonical, sizeof canonical);
  int is_host = strcmp(canonical, "host") == 0;
  int is_gpu = strcmp(canonical, "cuda") == 0 || strcmp(canonical, "rocm") == 0;
  if (!is_host && !is_gpu)
    return ccshim__fail(CCSHIM_EINVAL,
                        "context: unknown platform '%s'; expected host (cpu), "
                        "cuda (gpu) or rocm",
                        platform);
  if (is_gpu && opts->num_threads > 0)
    return ccshim__fail(CCSHIM_EINVAL,
                        "context: a thread pool belongs to the host platform, "
                        "not %s",
                        canonical);

  ccshim_context* ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) return ccshim__fail(CCSHIM_ENOMEM, "out of memory");
  ctx->magic = CCSHIM__CONTEXT_MAGIC;
  memcpy(ctx->platform, canonical, sizeof ctx->platform - 1);
  ctx->is_gpu = is_gpu;
  ctx->stream = is_gpu ? (opts->stream ? opts->stream : &ctx->stream_token) : NULL;
  ctx->device_ordinal = opts->device_ordinal;
  ctx->run_id = opts->run_id;
  ctx->alloc = opts->alloc;
  ctx->free = opts->free;
  ctx->alloc_user = opts->alloc_user;
  pthread_mutex_init(&ctx->mu, NULL);
  if (opts->num_threads > 0) {
    ccshim_status st = pool_new(opts->num_threads, &ctx->pool);
    if (st != CCSHIM_OK) {
      pthread_mutex_destroy(&ctx->mu);
      free(ctx);
      return st;
    }
  }
  *out = ctx;
  return CCSHIM_OK;
}

void ccshim_context_free(ccshim_context* ctx) {
  if (ctx == NULL) return;
  if (ctx->pool) pool_free(ctx->pool, ctx->pool->num_threads);
  for (int i = 0; i < 3; i++)
    if (ctx->states[i].object && ctx->states[i].deleter)
      ctx->states[i].deleter(ctx->states[i].object);
  pthread_mutex_destroy(&ctx->mu);
  free(ctx->user_data);
  ctx->magic = 0;
  free(ctx);
}

const char* ccshim_context_platform(const ccshim_context* ctx) { return ctx ? ctx->platform : ""; }

void* ccshim_context_stream(const ccshim_context* ctx) { return ctx ? ctx->stream : NULL; }

ccshim_status ccshim_context_set_user_data(ccshim_context* ctx, XLA_FFI_TypeId type_id,
                                           void* data) {
  if (ctx == NULL) return ccshim__fail(CCSHIM_EINVAL, "set_user_data: ctx is NULL");
  ccshim_status st = CCSHIM_OK;
  pthread_mutex_lock(&ctx->mu);
  size_t i = 0;
  while (i < ctx->num_user_data && ctx->user_data[i].type_id != type_id.type_id) i++;
  if (i == ctx->num_user_data) {
    ccshim__user_data* grown = realloc(ctx->user_data, (i + 1) * sizeof *ctx->user_data);
    if (grown == NULL) {
      st = ccshim__fail(CCSHIM_ENOMEM, "out of memory");
    } else {
      ctx->user_data = grown;
      ctx->num_user_data++;
    }
  }
  if (st == CCSHIM_OK) ctx->user_data[i] = (ccshim__user_data){type_id.type_id, data};
  pthread_mutex_unlock(&ctx->mu);
  return st;
}

void ccshim_context_set_extensions(ccshim_context* ctx, const XLA_FFI_Extension* first) {
  if (ctx) ctx->extensions = first;
}
