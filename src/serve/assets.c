/* assets.c - looking up the embedded viewer files by URL path. */
#include <string.h>

#include "serve/assets.h"

const jp_asset *jp_asset_find(const char *path) {
    if (strcmp(path, "/") == 0) path = "/index.html";
    for (size_t i = 0; i < jp_assets_count; i++)
        if (strcmp(jp_assets[i].path, path) == 0) return &jp_assets[i];
    return NULL;
}
