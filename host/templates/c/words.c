#include "words.h"

#include <ctype.h>

size_t count_words(const char *text, size_t length) {
    size_t words = 0;
    int in_word = 0;
    for (size_t i = 0; i < length; i++) {
        int space = isspace((unsigned char)text[i]);
        if (!space && !in_word) words++;
        in_word = !space;
    }
    return words;
}
