// Checksum tools for a language model, in C: SHA-256 and CRC-32 of a text or of a file under
// /data. Implements the WIT interface `toolhost:tool/tools` through the bindings that
// `xtask bindgen c` generates (toolbox.h); see build.sh. Built for tool contract 0.2
// (wit/tool.wit): a result is structured content that fits the tools' output schema, and
// checksum_file's links to the file it read. Built with -DTOOLHOST_CONTRACT_0_1 against
// wit/0.1.0, the same tools answer with one text, as components made before 0.2 do.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checksums.h"
#include "json.h"
#include "toolbox.h"

typedef exports_toolhost_tool_tools_tool_spec_t tool_spec;
typedef exports_toolhost_tool_tools_tool_error_t tool_error;
typedef exports_toolhost_tool_tools_capability_request_t capability_request;

// ---------------------------------------------------------------------------------------------
// A growable text buffer for results and messages.

typedef struct {
    char *data;
    size_t length;
    size_t capacity;
} buffer;

static void append(buffer *b, const char *text, size_t length) {
    if (b->length + length + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 256;
        while (capacity < b->length + length + 1) capacity *= 2;
        char *grown = realloc(b->data, capacity);
        if (!grown) abort();  // out of memory: the host reports the trap
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, text, length);
    b->length += length;
    b->data[b->length] = '\0';
}

static void appendf(buffer *b, const char *format, ...) {
    char small[256];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        append(b, small, (size_t)n);
        return;
    }
    char *large = malloc((size_t)n + 1);
    if (!large) abort();
    va_start(args, format);
    vsnprintf(large, (size_t)n + 1, format, args);
    va_end(args);
    append(b, large, (size_t)n);
    free(large);
}

// Appends `text` as a JSON string, quotes included.
static void append_json_string(buffer *b, const char *text, size_t length) {
    append(b, "\"", 1);
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            char escaped[2] = {'\\', (char)c};
            append(b, escaped, 2);
        } else if (c < 0x20) {
            appendf(b, "\\u%04x", c);
        } else {
            append(b, (const char *)&c, 1);
        }
    }
    append(b, "\"", 1);
}

// ---------------------------------------------------------------------------------------------
// The tools.

// What a tool's function returns: its result (JSON text), or an error.
typedef struct {
    bool ok;
    uint8_t error_kind;  // EXPORTS_TOOLHOST_TOOL_TOOLS_TOOL_ERROR_*
    buffer text;         // the result, or the error message
    buffer file;         // the file the result is about, if any
} outcome;

static outcome success(buffer text) { return (outcome){true, 0, text, {0}}; }

static outcome failure(uint8_t kind, const char *format, ...) {
    outcome out = {false, kind, {0}, {0}};
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    append(&out.text, message, strlen(message));
    return out;
}

#define INVALID EXPORTS_TOOLHOST_TOOL_TOOLS_TOOL_ERROR_INVALID_ARGUMENTS
#define FAILED EXPORTS_TOOLHOST_TOOL_TOOLS_TOOL_ERROR_FAILED

static void append_hex(buffer *b, const uint8_t *bytes, size_t length) {
    for (size_t i = 0; i < length; i++) appendf(b, "%02x", bytes[i]);
}

// The result object shared by all tools; `path` may be NULL.
static buffer result_json(const char *algorithm, const uint8_t *digest, size_t digest_length,
                          uint64_t bytes, const json_field *path) {
    buffer b = {0};
    appendf(&b, "{\"algorithm\":\"%s\",\"checksum\":\"", algorithm);
    append_hex(&b, digest, digest_length);
    appendf(&b, "\",\"bytes\":%llu", (unsigned long long)bytes);
    if (path) {
        append(&b, ",\"path\":", 8);
        append_json_string(&b, path->string, path->length);
    }
    append(&b, "}", 1);
    return b;
}

static void crc32_digest(uint32_t crc, uint8_t digest[4]) {
    digest[0] = (uint8_t)(crc >> 24);
    digest[1] = (uint8_t)(crc >> 16);
    digest[2] = (uint8_t)(crc >> 8);
    digest[3] = (uint8_t)crc;
}

static outcome run_sha256(const json_object *args) {
    const json_field *text = json_get(args, "text");
    sha256_ctx ctx;
    uint8_t digest[32];
    sha256_init(&ctx);
    sha256_update(&ctx, text->string, text->length);
    sha256_final(&ctx, digest);
    return success(result_json("sha256", digest, sizeof digest, text->length, NULL));
}

static outcome run_crc32(const json_object *args) {
    const json_field *text = json_get(args, "text");
    uint8_t digest[4];
    crc32_digest(crc32_update(0, text->string, text->length), digest);
    return success(result_json("crc32", digest, sizeof digest, text->length, NULL));
}

// Whether a string field is exactly `text`.
static bool equals(const json_field *field, const char *text) {
    return field->length == strlen(text) && memcmp(field->string, text, field->length) == 0;
}

static outcome run_checksum_file(const json_object *args) {
    const json_field *path = json_get(args, "path");
    const json_field *algorithm = json_get(args, "algorithm");
    bool sha = equals(algorithm, "sha256");
    if (!sha && !equals(algorithm, "crc32")) {
        return failure(INVALID, "`algorithm` must be \"sha256\" or \"crc32\", not \"%s\": send "
                       "\"algorithm\": \"sha256\" (a cryptographic hash) or \"crc32\" (a quick "
                       "checksum)", algorithm->string);
    }
    if (strlen(path->string) != path->length || path->length == 0) {
        return failure(INVALID, "`path` must be a non-empty file path without NUL characters: "
                       "send one such as \"path\": \"/data/report.txt\"");
    }
    struct stat info;
    if (stat(path->string, &info) != 0) {
        return failure(FAILED, "cannot open `%s`: %s (only directories granted to this tool exist for it)",
                       path->string, strerror(errno));
    }
    if (!S_ISREG(info.st_mode)) {
        const char *kind = S_ISDIR(info.st_mode) ? "a directory" : "a special file";
        return failure(FAILED, "`%s` is %s, not a regular file", path->string, kind);
    }
    FILE *file = fopen(path->string, "rb");
    if (!file) {
        return failure(FAILED, "cannot open `%s`: %s", path->string, strerror(errno));
    }
    sha256_ctx ctx;
    uint32_t crc = 0;
    uint64_t total = 0;
    sha256_init(&ctx);
    static uint8_t chunk[64 * 1024];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, file)) > 0) {
        if (sha) {
            sha256_update(&ctx, chunk, n);
        } else {
            crc = crc32_update(crc, chunk, n);
        }
        total += n;
    }
    int read_error = ferror(file) ? errno : 0;
    fclose(file);
    if (read_error) {
        return failure(FAILED, "cannot read `%s`: %s", path->string, strerror(read_error));
    }
    uint8_t digest[32];
    if (sha) {
        sha256_final(&ctx, digest);
    } else {
        crc32_digest(crc, digest);
    }
    outcome out = success(result_json(algorithm->string, digest, sha ? 32 : 4, total, path));
    append(&out.file, path->string, path->length);
    return out;
}

// One argument: its name and whether a call must give it. All arguments here are strings.
typedef struct {
    const char *name;
    bool required;
} argument;

typedef struct {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema;
    const char *example;  // a call, for the messages about bad arguments
    const argument *arguments;
    bool reads_data;  // requests read access to /data
    outcome (*run)(const json_object *args);
} tool;

static const argument TEXT_ARGUMENTS[] = {{"text", true}, {NULL, false}};
static const argument FILE_ARGUMENTS[] = {{"path", true}, {"algorithm", true}, {NULL, false}};

#define TEXT_SCHEMA(what)                                                                      \
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":"      \
    "\"The text to " what "; its UTF-8 bytes are used, exactly as given (mind trailing "       \
    "newlines).\"}},\"required\":[\"text\"],\"additionalProperties\":false}"

static const tool TOOLS[] = {
    {"sha256", "SHA-256 of a text",
     "Computes the SHA-256 hash of a text (its UTF-8 bytes) and returns it as 64 lowercase hex "
     "digits. Use it to fingerprint text or to compare against a published hash.",
     TEXT_SCHEMA("hash"), "{\"text\": \"hello\"}", TEXT_ARGUMENTS, false, run_sha256},
    {"crc32", "CRC-32 of a text",
     "Computes the CRC-32 checksum (IEEE, as in zip, gzip and PNG) of a text (its UTF-8 bytes) "
     "and returns it as 8 lowercase hex digits.",
     TEXT_SCHEMA("checksum"), "{\"text\": \"hello\"}", TEXT_ARGUMENTS, false, run_crc32},
    {"checksum_file", "Checksum of a file",
     "Computes the SHA-256 or CRC-32 checksum of a file under /data, "
     "to verify a download or check whether two files are the same.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"The file, as the tool sees it, such as "
     "/data/report.pdf.\"},"
     "\"algorithm\":{\"type\":\"string\",\"enum\":[\"sha256\",\"crc32\"],\"description\":"
     "\"sha256 (a cryptographic hash) or crc32 (a quick checksum).\"}},"
     "\"required\":[\"path\",\"algorithm\"],\"additionalProperties\":false}",
     "{\"path\": \"/data/report.txt\", \"algorithm\": \"sha256\"}", FILE_ARGUMENTS, true,
     run_checksum_file},
};
#define TOOL_COUNT (sizeof TOOLS / sizeof TOOLS[0])

// Checks `args` against a tool's arguments: all present and required ones given, all strings.
static outcome check_arguments(const tool *t, const json_object *args) {
    for (size_t i = 0; i < args->count; i++) {
        const json_field *field = &args->fields[i];
        const argument *a = t->arguments;
        while (a->name && !(strlen(a->name) == field->key_length &&
                            memcmp(a->name, field->key, field->key_length) == 0)) {
            a++;
        }
        if (!a->name) {
            return failure(INVALID, "%s has no argument `%s`: leave it out; send arguments such as %s",
                           t->name, field->key, t->example);
        }
        if (field->type != JSON_STRING) {
            return failure(INVALID, "`%s` must be a string, not %s; send arguments such as %s",
                           a->name, json_type_name(field->type), t->example);
        }
    }
    for (const argument *a = t->arguments; a->name; a++) {
        if (a->required && !json_get(args, a->name)) {
            return failure(INVALID, "`%s` is missing; %s needs it: send arguments such as %s",
                           a->name, t->name, t->example);
        }
    }
    return (outcome){true, 0, {0}, {0}};
}

static outcome run(const char *name, size_t name_length, const char *text, size_t length) {
    const tool *t = NULL;
    for (size_t i = 0; i < TOOL_COUNT; i++) {
        if (strlen(TOOLS[i].name) == name_length && memcmp(TOOLS[i].name, name, name_length) == 0) {
            t = &TOOLS[i];
        }
    }
    if (!t) {
        return failure(INVALID, "there is no tool `%.*s`; this component offers sha256, crc32 "
                       "and checksum_file", (int)(name_length > 64 ? 64 : name_length), name);
    }
    char message[256];
    json_object args;
    if (!json_parse_object(text, length, &args, message, sizeof message)) {
        return failure(INVALID, "%s; send arguments such as %s", message, t->example);
    }
    outcome checked = check_arguments(t, &args);
    outcome out = checked.ok ? t->run(&args) : checked;
    json_object_free(&args);
    return out;
}

// ---------------------------------------------------------------------------------------------
// The WIT exports. Everything returned is heap memory: the generated post-return functions free
// it once the host has copied it.

static toolbox_string_t taken(buffer *b) { return (toolbox_string_t){(uint8_t *)b->data, b->length}; }

#ifdef TOOLHOST_CONTRACT_0_1
typedef toolbox_string_t wit_result;

// A 0.1 spec has no title, annotations or output schema.
static void describe_more(tool_spec *spec, const tool *t) {
    (void)t;
    spec->output_schema.is_some = false;
}

// A 0.1 result is its text alone.
static void answer(outcome *out, wit_result *ret) { *ret = taken(&out->text); }
#else
typedef exports_toolhost_tool_tools_outcome_t wit_result;
typedef exports_toolhost_tool_tools_content_t content;

// What every tool returns: the host checks each result's structured content against it.
static const char OUTPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"algorithm\":{\"type\":\"string\",\"enum\":[\"sha256\",\"crc32\"],\"description\":"
    "\"The algorithm used.\"},"
    "\"checksum\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]+$\",\"description\":"
    "\"The checksum, in lowercase hex digits.\"},"
    "\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"How many bytes were read.\"},"
    "\"path\":{\"type\":\"string\",\"description\":\"The file, for checksum_file.\"}},"
    "\"required\":[\"algorithm\",\"checksum\",\"bytes\"],\"additionalProperties\":false}";

#define SAYS(value) ((toolbox_option_bool_t){true, value})

// A title for people, the output schema, and hints for clients: the tools read what they are
// given, change nothing, and give the same answer every time.
static void describe_more(tool_spec *spec, const tool *t) {
    spec->title.is_some = true;
    toolbox_string_dup(&spec->title.val, t->title);
    spec->output_schema.is_some = true;
    toolbox_string_dup(&spec->output_schema.val, OUTPUT_SCHEMA);
    spec->annotations.read_only = SAYS(true);
    spec->annotations.destructive = SAYS(false);
    spec->annotations.idempotent = SAYS(true);
    spec->annotations.open_world = SAYS(false);
}

// `path` as a file:// URI: bytes other than letters, digits, `/-._~` percent-encoded.
static buffer file_uri(const buffer *path) {
    buffer uri = {0};
    append(&uri, "file://", 7);
    for (size_t i = 0; i < path->length; i++) {
        unsigned char c = (unsigned char)path->data[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("/-._~", c)) {
            append(&uri, (const char *)&c, 1);
        } else {
            appendf(&uri, "%%%02X", c);
        }
    }
    return uri;
}

// A 0.2 result: the JSON as structured content (the host gives it to the model as text); a
// checksum of a file also has the JSON as text and a link to the file, which a client can open.
static void answer(outcome *out, wit_result *ret) {
    ret->tag = EXPORTS_TOOLHOST_TOOL_TOOLS_OUTCOME_COMPLETE;
    exports_toolhost_tool_tools_tool_result_t *result = &ret->val.complete;
    // `ret` is the generated code's uninitialized local: set every field.
    *result = (exports_toolhost_tool_tools_tool_result_t){0};
    if (out->file.length > 0 && out->file.data[0] == '/') {
        content *parts = calloc(2, sizeof *parts);
        if (!parts) abort();
        parts[0].tag = EXPORTS_TOOLHOST_TOOL_TOOLS_CONTENT_TEXT;
        toolbox_string_dup_n(&parts[0].val.text, out->text.data, out->text.length);
        parts[1].tag = EXPORTS_TOOLHOST_TOOL_TOOLS_CONTENT_RESOURCE_LINK;
        exports_toolhost_tool_tools_resource_link_t *link = &parts[1].val.resource_link;
        buffer uri = file_uri(&out->file);
        link->uri = taken(&uri);
        const char *name = strrchr(out->file.data, '/') + 1;
        toolbox_string_dup(&link->name, *name ? name : out->file.data);
        link->description.is_some = true;
        toolbox_string_dup(&link->description.val, "The file checksummed");
        result->content = (exports_toolhost_tool_tools_list_content_t){parts, 2};
    }
    result->structured.is_some = true;
    result->structured.val = taken(&out->text);
}
#endif

void exports_toolhost_tool_tools_describe(exports_toolhost_tool_tools_list_tool_spec_t *ret) {
    ret->len = TOOL_COUNT;
    ret->ptr = calloc(TOOL_COUNT, sizeof(tool_spec));
    if (!ret->ptr) abort();
    for (size_t i = 0; i < TOOL_COUNT; i++) {
        tool_spec *spec = &ret->ptr[i];
        toolbox_string_dup(&spec->name, TOOLS[i].name);
        toolbox_string_dup(&spec->description, TOOLS[i].description);
        toolbox_string_dup(&spec->input_schema, TOOLS[i].input_schema);
        describe_more(spec, &TOOLS[i]);
        if (TOOLS[i].reads_data) {
            capability_request *request = calloc(1, sizeof *request);
            if (!request) abort();
            request->capability.tag = EXPORTS_TOOLHOST_TOOL_TOOLS_CAPABILITY_READ_DIR;
            toolbox_string_dup(&request->capability.val.read_dir, "/data");
            toolbox_string_dup(&request->reason, "the files to checksum");
            spec->capabilities.ptr = request;
            spec->capabilities.len = 1;
        }
    }
}

bool exports_toolhost_tool_tools_call(toolbox_string_t *name, toolbox_string_t *arguments,
                                      exports_toolhost_tool_tools_call_context_t *context,
                                      wit_result *ret, tool_error *err) {
    outcome out = run((const char *)name->ptr, name->len, (const char *)arguments->ptr,
                      arguments->len);
    // The arguments belong to this function now.
    toolbox_string_free(name);
    toolbox_string_free(arguments);
    exports_toolhost_tool_tools_call_context_free(context);
    if (out.ok) {
        answer(&out, ret);
    } else {
        err->tag = out.error_kind;
        // Both cases of tool-error carry a string at the same place.
        err->val.failed = taken(&out.text);
    }
    free(out.file.data);
    return out.ok;
}
