/* http_response.h - a jp_http_response outside a server (internal: tests/fuzz/fuzz_viewer.c feeds
 * whole requests to a handler and reads what it answered). */
#ifndef JP_SERVE_HTTP_RESPONSE_H
#define JP_SERVE_HTTP_RESPONSE_H

#include "jaxprof/jaxprof_serve.h"

/* A new response (404 until a handler fills it), or NULL when memory runs out. */
jp_http_response *jp_http_response_new(void);
void jp_http_response_free(jp_http_response *resp);
/* Its status. */
int jp_http_response_status(const jp_http_response *resp);
/* Its Content-Type value. */
const char *jp_http_response_type(const jp_http_response *resp);
/* Its bytes body (a bytes or status answer) into *data, borrowed; its length. A file answer: 0. */
size_t jp_http_response_body(const jp_http_response *resp, const char **data);

#endif /* JP_SERVE_HTTP_RESPONSE_H */
