// A strict JSON reader (RFC 8259) for the top-level object of tool arguments; see json.h.
// The input comes from the component model as a `string`, which is valid UTF-8 by construction,
// so bytes >= 0x80 are copied as they are.
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// How deeply arrays and objects may nest; deeper input is refused rather than risking the stack.
#define MAX_DEPTH 64

typedef struct {
    const char *text;
    size_t length;
    size_t pos;
    char *error;
    size_t error_size;
} parser;

static bool fail(parser *p, const char *format, ...) {
    int n = snprintf(p->error, p->error_size, "the arguments are not valid JSON (at byte %zu): ",
                     p->pos);
    if (n >= 0 && (size_t)n < p->error_size) {
        va_list args;
        va_start(args, format);
        vsnprintf(p->error + n, p->error_size - (size_t)n, format, args);
        va_end(args);
    }
    return false;
}

static int peek(const parser *p) {
    return p->pos < p->length ? (unsigned char)p->text[p->pos] : -1;
}

static void skip_space(parser *p) {
    while (p->pos < p->length) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

static bool expect_char(parser *p, char c, const char *what) {
    if (peek(p) != (unsigned char)c) {
        return peek(p) < 0 ? fail(p, "the text ends where %s was expected", what)
                           : fail(p, "expected %s, found `%c`", what, p->text[p->pos]);
    }
    p->pos++;
    return true;
}

static int hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Reads the four hex digits of a \u escape at p->pos.
static bool read_hex4(parser *p, uint32_t *out) {
    if (p->length - p->pos < 4) {
        return fail(p, "a \\u escape needs four hex digits");
    }
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit((unsigned char)p->text[p->pos + i]);
        if (digit < 0) {
            return fail(p, "a \\u escape needs four hex digits");
        }
        value = value * 16 + (uint32_t)digit;
    }
    p->pos += 4;
    *out = value;
    return true;
}

static size_t put_utf8(char *out, uint32_t c) {
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

// Reads a string at p->pos (at its opening quote). With `out`, stores the decoded text in a new
// NUL-terminated buffer; without, only checks it. A decoded string is never longer than its
// JSON form, so one allocation of that size is enough.
static bool parse_string(parser *p, char **out, size_t *out_length) {
    if (!expect_char(p, '"', "a string")) {
        return false;
    }
    size_t end = p->pos;
    while (end < p->length && p->text[end] != '"') {
        end += p->text[end] == '\\' ? 2 : 1;
    }
    if (end >= p->length) {
        return fail(p, "a string is never closed");
    }
    char *buffer = NULL;
    size_t used = 0;
    if (out) {
        buffer = malloc(end - p->pos + 1);
        if (!buffer) {
            return fail(p, "out of memory");
        }
    }
    char scratch[4];
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->text[p->pos];
        char *to = buffer ? buffer + used : scratch;
        if (c < 0x20) {
            free(buffer);
            return fail(p, "a control character (0x%02x) inside a string must be escaped", c);
        }
        if (c != '\\') {
            *to = (char)c;
            used += buffer ? 1 : 0;
            p->pos++;
            continue;
        }
        p->pos++;
        char escape = p->text[p->pos++];
        char simple = 0;
        switch (escape) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default:
            p->pos--;
            free(buffer);
            return fail(p, "`\\%c` is not a JSON escape", escape);
        }
        if (simple) {
            *to = simple;
            used += buffer ? 1 : 0;
            continue;
        }
        uint32_t code;
        if (!read_hex4(p, &code)) {
            free(buffer);
            return false;
        }
        if (code >= 0xDC00 && code <= 0xDFFF) {
            free(buffer);
            return fail(p, "a \\u escape is a lone low surrogate");
        }
        if (code >= 0xD800 && code <= 0xDBFF) {
            uint32_t low;
            if (end - p->pos < 6 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u') {
                free(buffer);
                return fail(p, "a high surrogate \\u escape must be followed by a low one");
            }
            p->pos += 2;
            if (!read_hex4(p, &low)) {
                free(buffer);
                return false;
            }
            if (low < 0xDC00 || low > 0xDFFF) {
                free(buffer);
                return fail(p, "a high surrogate \\u escape must be followed by a low one");
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        size_t n = put_utf8(to, code);
        used += buffer ? n : 0;
    }
    p->pos = end + 1;
    if (out) {
        buffer[used] = '\0';
        *out = buffer;
        *out_length = used;
    }
    return true;
}

static bool parse_number(parser *p) {
    size_t start = p->pos;
    if (peek(p) == '-') p->pos++;
    if (peek(p) == '0') {
        p->pos++;
    } else if (peek(p) >= '1' && peek(p) <= '9') {
        while (peek(p) >= '0' && peek(p) <= '9') p->pos++;
    } else {
        p->pos = start;
        return fail(p, "a number needs digits");
    }
    if (peek(p) == '.') {
        p->pos++;
        if (!(peek(p) >= '0' && peek(p) <= '9')) return fail(p, "a number needs digits after `.`");
        while (peek(p) >= '0' && peek(p) <= '9') p->pos++;
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++;
        if (peek(p) == '+' || peek(p) == '-') p->pos++;
        if (!(peek(p) >= '0' && peek(p) <= '9')) return fail(p, "a number needs digits in its exponent");
        while (peek(p) >= '0' && peek(p) <= '9') p->pos++;
    }
    return true;
}

static bool parse_literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->length - p->pos < n || memcmp(p->text + p->pos, word, n) != 0) {
        return fail(p, "expected a JSON value");
    }
    p->pos += n;
    return true;
}

static bool parse_value(parser *p, int depth, json_type *type, char **string, size_t *length);

// Reads a nested array or object, only to check it.
static bool skip_container(parser *p, int depth, char open) {
    char close = open == '[' ? ']' : '}';
    if (depth >= MAX_DEPTH) {
        return fail(p, "arrays and objects nest more than %d deep", MAX_DEPTH);
    }
    p->pos++;
    skip_space(p);
    if (peek(p) == (unsigned char)close) {
        p->pos++;
        return true;
    }
    for (;;) {
        json_type type;
        if (open == '{') {
            if (!parse_string(p, NULL, NULL)) return false;
            skip_space(p);
            if (!expect_char(p, ':', "`:`")) return false;
            skip_space(p);
        }
        if (!parse_value(p, depth + 1, &type, NULL, NULL)) return false;
        skip_space(p);
        if (peek(p) == ',') {
            p->pos++;
            skip_space(p);
            continue;
        }
        return expect_char(p, close, open == '[' ? "`,` or `]`" : "`,` or `}`");
    }
}

static bool parse_value(parser *p, int depth, json_type *type, char **string, size_t *length) {
    switch (peek(p)) {
    case '"':
        *type = JSON_STRING;
        return parse_string(p, string, length);
    case '[':
        *type = JSON_ARRAY;
        return skip_container(p, depth, '[');
    case '{':
        *type = JSON_OBJECT;
        return skip_container(p, depth, '{');
    case 't':
        *type = JSON_BOOL;
        return parse_literal(p, "true");
    case 'f':
        *type = JSON_BOOL;
        return parse_literal(p, "false");
    case 'n':
        *type = JSON_NULL;
        return parse_literal(p, "null");
    case -1:
        return fail(p, "the text ends where a value was expected");
    default:
        if (peek(p) != '-' && !(peek(p) >= '0' && peek(p) <= '9')) {
            return fail(p, "expected a JSON value, found `%c`", p->text[p->pos]);
        }
        *type = JSON_NUMBER;
        return parse_number(p);
    }
}

static bool same_key(const json_field *field, const char *key, size_t key_length) {
    return field->key_length == key_length && memcmp(field->key, key, key_length) == 0;
}

bool json_parse_object(const char *text, size_t length, json_object *out, char *error,
                       size_t error_size) {
    parser p = {text, length, 0, error, error_size};
    json_object object = {NULL, 0};
    size_t capacity = 0;
    skip_space(&p);
    if (peek(&p) != '{') {
        if (peek(&p) < 0) {
            snprintf(error, error_size, "the arguments are empty; they must be a JSON object");
        } else {
            snprintf(error, error_size, "the arguments must be a JSON object, starting with `{`");
        }
        return false;
    }
    p.pos++;
    skip_space(&p);
    bool ok = true;
    if (peek(&p) == '}') {
        p.pos++;
    } else {
        for (;;) {
            json_field field = {0};
            if (!parse_string(&p, &field.key, &field.key_length)) {
                ok = false;
                break;
            }
            for (size_t i = 0; i < object.count; i++) {
                if (same_key(&object.fields[i], field.key, field.key_length)) {
                    snprintf(error, error_size, "the argument `%s` is given twice", field.key);
                    free(field.key);
                    ok = false;
                    break;
                }
            }
            if (!ok) break;
            skip_space(&p);
            ok = expect_char(&p, ':', "`:`");
            if (ok) {
                skip_space(&p);
                ok = parse_value(&p, 1, &field.type, &field.string, &field.length);
            }
            if (ok && object.count == capacity) {
                capacity = capacity ? capacity * 2 : 4;
                json_field *grown = realloc(object.fields, capacity * sizeof *grown);
                ok = grown != NULL || fail(&p, "out of memory");
                if (grown) object.fields = grown;
            }
            if (!ok) {
                free(field.key);
                free(field.string);
                break;
            }
            object.fields[object.count++] = field;
            skip_space(&p);
            if (peek(&p) == ',') {
                p.pos++;
                skip_space(&p);
                continue;
            }
            ok = expect_char(&p, '}', "`,` or `}`");
            break;
        }
    }
    if (ok) {
        skip_space(&p);
        if (p.pos != p.length) {
            ok = fail(&p, "there is more text after the object");
        }
    }
    if (!ok) {
        json_object_free(&object);
        return false;
    }
    *out = object;
    return true;
}

const json_field *json_get(const json_object *object, const char *key) {
    for (size_t i = 0; i < object->count; i++) {
        if (same_key(&object->fields[i], key, strlen(key))) {
            return &object->fields[i];
        }
    }
    return NULL;
}

const char *json_type_name(json_type type) {
    switch (type) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "a value";
}

void json_object_free(json_object *object) {
    for (size_t i = 0; i < object->count; i++) {
        free(object->fields[i].key);
        free(object->fields[i].string);
    }
    free(object->fields);
    object->fields = NULL;
    object->count = 0;
}
