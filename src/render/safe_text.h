/* safe_text.h - text for a terminal with its control characters neutralised, so that a name in a
 * profile (an op, a scope, a file) can never move the cursor, clear the screen or set the title
 * (internal to libjaxprof; jp_text_fput_safe is the public entry). */
#ifndef JP_RENDER_SAFE_TEXT_H
#define JP_RENDER_SAFE_TEXT_H

#include <stdio.h>

/* A write-only stream that passes everything to out through the jp_text_fput_safe filter (newlines
 * and tabs kept), keeping the state of a UTF-8 sequence cut between two writes. fclose it to
 * flush into out (out stays open). NULL when out of memory: the caller writes to out as is. */
FILE *jp_safe_text_open(FILE *out);

#endif
