// What the tool computes, in plain C (tested by words_test.c without a component).
#ifndef WORDS_H
#define WORDS_H
#include <stddef.h>

// The number of words of `text` (`length` bytes): runs of characters between spaces.
size_t count_words(const char *text, size_t length);

#endif
