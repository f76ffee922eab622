/* assets.h - the viewer's static files (HTML, JS, CSS), embedded into the library at build time by
 * tools/embed_assets.py from src/serve/assets/ (internal). */
#ifndef JP_OUTPUTS_ASSETS_H
#define JP_OUTPUTS_ASSETS_H

#include <stddef.h>

typedef struct jp_asset {
    const char *path;         /* URL path, "/index.html" */
    const char *content_type; /* for the Content-Type header */
    const unsigned char *data;
    size_t len;
} jp_asset;

extern const jp_asset jp_assets[];
extern const size_t jp_assets_count;

/* The asset served at path ("/" is "/index.html"), or NULL. */
const jp_asset *jp_asset_find(const char *path);

#endif
