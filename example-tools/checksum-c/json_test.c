// Tests of the JSON reader, run natively with sanitizers (no WebAssembly needed):
//   cc -std=c11 -g -fsanitize=address,undefined -o /tmp/json_test json_test.c json.c && /tmp/json_test
// It also feeds every prefix of each valid case back in, which must fail cleanly, never crash.
#include <stdio.h>
#include <string.h>

#include "json.h"

static int failures = 0;
static int passes = 0;

static void check(bool condition, const char *what, const char *input) {
    if (condition) {
        passes++;
    } else {
        failures++;
        printf("FAIL: %s: %s\n", what, input);
    }
}

static void accepts(const char *input) {
    char error[256];
    json_object object;
    bool ok = json_parse_object(input, strlen(input), &object, error, sizeof error);
    check(ok, error, input);
    if (ok) json_object_free(&object);
    // Every proper prefix of a valid object is invalid.
    for (size_t n = 0; n < strlen(input); n++) {
        if (json_parse_object(input, n, &object, error, sizeof error)) {
            // Only trailing spaces may be cut off.
            bool spaces = strspn(input + n, " \t\r\n") == strlen(input + n);
            check(spaces, "a prefix parsed", input);
            json_object_free(&object);
        }
    }
}

static void rejects(const char *input, const char *message) {
    char error[256] = "";
    json_object object;
    bool ok = json_parse_object(input, strlen(input), &object, error, sizeof error);
    check(!ok, "accepted", input);
    if (ok) {
        json_object_free(&object);
    } else {
        check(strstr(error, message) != NULL, error, input);
    }
}

static void string_field(const char *input, const char *key, const char *expected, size_t length) {
    char error[256];
    json_object object;
    if (!json_parse_object(input, strlen(input), &object, error, sizeof error)) {
        check(false, error, input);
        return;
    }
    const json_field *field = json_get(&object, key);
    check(field && field->type == JSON_STRING && field->length == length &&
              memcmp(field->string, expected, length) == 0,
          "wrong string", input);
    json_object_free(&object);
}

int main(void) {
    accepts("{}");
    accepts(" { } ");
    accepts("{\"text\": \"abc\"}");
    accepts("{\"a\": 1, \"b\": -0.5e+10, \"c\": true, \"d\": false, \"e\": null}");
    accepts("{\"nested\": {\"x\": [1, [2, {\"y\": []}], \"z\"]}, \"s\": \"\"}");
    accepts("{\"esc\": \"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"}\n");

    string_field("{\"text\": \"a\\nb\"}", "text", "a\nb", 3);
    string_field("{\"text\": \"\\u00e9\"}", "text", "\xc3\xa9", 2);
    string_field("{\"text\": \"\\ud83d\\ude00\"}", "text", "\xf0\x9f\x98\x80", 4);
    string_field("{\"text\": \"nul\\u0000inside\"}", "text", "nul\0inside", 10);
    string_field("{\"k\\u0065y\": \"v\"}", "key", "v", 1);

    rejects("", "empty");
    rejects("   ", "empty");
    rejects("[1, 2]", "JSON object");
    rejects("\"text\"", "JSON object");
    rejects("nope", "JSON object");
    rejects("{", "ends");
    rejects("{\"a\"}", "`:`");
    rejects("{\"a\": }", "value");
    rejects("{\"a\": 1,}", "string");
    rejects("{\"a\": 1 \"b\": 2}", "`,` or `}`");
    rejects("{\"a\": 01}", "`,` or `}`");
    rejects("{\"a\": 1.}", "digits");
    rejects("{\"a\": 1e}", "exponent");
    rejects("{\"a\": -}", "digits");
    rejects("{\"a\": tru}", "value");
    rejects("{\"a\": \"x}", "never closed");
    rejects("{\"a\": \"x\\\"}", "never closed");
    rejects("{\"a\": \"\\x\"}", "not a JSON escape");
    rejects("{\"a\": \"\\u12\"}", "four hex digits");
    rejects("{\"a\": \"\\ud83d\"}", "low one");
    rejects("{\"a\": \"\\ude00\"}", "lone low surrogate");
    rejects("{\"a\": \"tab\there\"}", "control character");
    rejects("{\"a\": [1, 2}", "`,` or `]`");
    rejects("{\"a\": 1} x", "more text");
    rejects("{\"a\": 1, \"a\": 2}", "twice");
    rejects("{'a': 1}", "string");

    char deep[400];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "{\"a\": ");
    for (int i = 0; i < 100; i++) deep[n++] = '[';
    deep[n] = '\0';
    rejects(deep, "nest more than");

    printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
