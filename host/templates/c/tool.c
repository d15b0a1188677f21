// A tool for language models, as a WebAssembly component that toolhost runs sandboxed.
//
// Implements the `tools` interface of wit/tool.wit (toolhost's tool contract 0.2) through the
// bindings ./build.sh generates (toolbox.h): `describe` says what the tools are (name,
// description, JSON schemas of the arguments and of the result), `call` runs one. Add a tool:
// describe it in exports_toolhost_tool_tools_describe, run it in exports_toolhost_tool_tools_call,
// rebuild and check (`host check dist/NAME.wasm`).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "toolbox.h"
#include "words.h"

typedef exports_toolhost_tool_tools_tool_spec_t tool_spec;
typedef exports_toolhost_tool_tools_tool_error_t tool_error;
typedef exports_toolhost_tool_tools_outcome_t outcome;
typedef exports_toolhost_tool_tools_content_t content;

// What a call of count_words should send, for the messages of invalid arguments.
#define SEND "send {\"text\": \"the text to count\"}"

static const char INPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":"
    "\"The text to count the words of.\"}},\"required\":[\"text\"],"
    "\"additionalProperties\":false}";

static const char OUTPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"words\":{\"type\":\"integer\",\"description\":"
    "\"How many words.\"}},\"required\":[\"words\"]}";

#define SAYS(value) ((toolbox_option_bool_t){true, value})

void exports_toolhost_tool_tools_describe(exports_toolhost_tool_tools_list_tool_spec_t *ret) {
    tool_spec *spec = calloc(1, sizeof *spec);
    if (!spec) abort();
    toolbox_string_dup(&spec->name, "count_words");
    spec->title.is_some = true;
    toolbox_string_dup(&spec->title.val, "Count words");
    toolbox_string_dup(&spec->description,
                       "Counts the words of a text (runs of characters between spaces). Use it "
                       "instead of counting by eye.");
    toolbox_string_dup(&spec->input_schema, INPUT_SCHEMA);
    spec->output_schema.is_some = true;
    toolbox_string_dup(&spec->output_schema.val, OUTPUT_SCHEMA);
    spec->annotations.read_only = SAYS(true);
    spec->annotations.destructive = SAYS(false);
    spec->annotations.idempotent = SAYS(true);
    spec->annotations.open_world = SAYS(false);
    // What the tool needs from outside (a directory, a host on the network): nothing here,
    // so spec->capabilities stays empty.
    ret->ptr = spec;
    ret->len = 1;
}

// Sets `err` to invalid-arguments: `problem`, and what to send.
static bool invalid(tool_error *err, const char *problem) {
    char message[512];
    snprintf(message, sizeof message, "%s; %s", problem, SEND);
    err->tag = EXPORTS_TOOLHOST_TOOL_TOOLS_TOOL_ERROR_INVALID_ARGUMENTS;
    toolbox_string_dup(&err->val.invalid_arguments, message);
    return false;
}

// count_words: the `text` argument's words, as text and as structured content.
static bool count_words_call(const char *arguments, size_t length, outcome *ret,
                             tool_error *err) {
    char problem[256];
    json_object args;
    if (!json_parse_object(arguments, length, &args, problem, sizeof problem)) {
        return invalid(err, problem);
    }
    const json_field *text = json_get(&args, "text");
    if (!text || text->type != JSON_STRING) {
        snprintf(problem, sizeof problem, "`text` must be a string, not %s",
                 text ? json_type_name(text->type) : "missing");
        json_object_free(&args);
        return invalid(err, problem);
    }
    size_t words = count_words(text->string, text->length);
    json_object_free(&args);

    char said[64], structured[64];
    snprintf(said, sizeof said, "%zu words", words);
    snprintf(structured, sizeof structured, "{\"words\":%zu}", words);
    ret->tag = EXPORTS_TOOLHOST_TOOL_TOOLS_OUTCOME_COMPLETE;
    exports_toolhost_tool_tools_tool_result_t *result = &ret->val.complete;
    // `ret` is the generated code's uninitialized local: set every field.
    *result = (exports_toolhost_tool_tools_tool_result_t){0};
    content *part = calloc(1, sizeof *part);
    if (!part) abort();
    part->tag = EXPORTS_TOOLHOST_TOOL_TOOLS_CONTENT_TEXT;
    toolbox_string_dup(&part->val.text, said);
    result->content = (exports_toolhost_tool_tools_list_content_t){part, 1};
    result->structured.is_some = true;
    toolbox_string_dup(&result->structured.val, structured);
    return true;
}

bool exports_toolhost_tool_tools_call(toolbox_string_t *name, toolbox_string_t *arguments,
                                      exports_toolhost_tool_tools_call_context_t *context,
                                      outcome *ret, tool_error *err) {
    bool ok;
    if (name->len == strlen("count_words") && memcmp(name->ptr, "count_words", name->len) == 0) {
        ok = count_words_call((const char *)arguments->ptr, arguments->len, ret, err);
    } else {
        err->tag = EXPORTS_TOOLHOST_TOOL_TOOLS_TOOL_ERROR_FAILED;
        toolbox_string_dup(&err->val.failed, "there is no such tool");
        ok = false;
    }
    // The arguments belong to this function.
    toolbox_string_free(name);
    toolbox_string_free(arguments);
    exports_toolhost_tool_tools_call_context_free(context);
    return ok;
}
