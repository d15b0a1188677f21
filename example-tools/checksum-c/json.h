// A small, strict JSON reader for tool arguments: a JSON object whose fields the tool reads by
// name. Nested arrays and objects are checked and skipped (their type is kept, so a tool can say
// "`path` must be a string, not an array"). Every malformed input is an error with a message;
// nothing is assumed about the input, which is any text a model wrote.
#ifndef CHECKSUM_JSON_H
#define CHECKSUM_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

// One field of the top-level object. For JSON_STRING, `string` holds the decoded UTF-8 text
// (NUL-terminated, though it may also contain NUL: use `length`).
typedef struct {
    char *key;
    size_t key_length;
    json_type type;
    char *string;
    size_t length;
} json_field;

typedef struct {
    json_field *fields;
    size_t count;
} json_object;

// Parses `text` (`length` bytes) as a JSON object. On success fills `out` (free it with
// json_object_free) and returns true; on failure writes a message to `error` and returns false.
bool json_parse_object(const char *text, size_t length, json_object *out, char *error,
                       size_t error_size);

// The field named `key`, or NULL.
const json_field *json_get(const json_object *object, const char *key);

// "a string", "an array", ... for messages.
const char *json_type_name(json_type type);

void json_object_free(json_object *object);

#endif
