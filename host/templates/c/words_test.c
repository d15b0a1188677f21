// Unit tests of words.c, run natively by ./test.sh:   cc words_test.c words.c && ./a.out
#include <stdio.h>
#include <string.h>

#include "words.h"

static int failures = 0;

static void expect(const char *text, size_t expected) {
    size_t got = count_words(text, strlen(text));
    if (got != expected) {
        printf("count_words(\"%s\") = %zu, expected %zu\n", text, got, expected);
        failures++;
    }
}

int main(void) {
    expect("one two  three\nfour", 4);
    expect("   ", 0);
    expect("", 0);
    return failures ? 1 : 0;
}
