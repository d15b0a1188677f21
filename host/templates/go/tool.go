// A tool for language models, as a WebAssembly component that toolhost runs sandboxed.
//
// Implements the `tools` interface of wit/tool.wit (toolhost's tool contract 0.2) through the
// bindings ./build.sh generates: Describe says what the tools are (name, description, JSON
// schemas of the arguments and of the result), Call runs one. ./build.sh puts these files in
// the package export_toolhost_tool_tools of the generated module, where the bindings look for
// Describe and Call. Add a tool: describe it in Describe, run it in Call, rebuild and check
// (`host check dist/NAME.wasm`).
package export_toolhost_tool_tools

import (
	"encoding/json"
	"fmt"

	wit "wit_component/toolhost_tool_tools"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// What a call of count_words should send, for the messages of invalid arguments.
const send = `send {"text": "the text to count"}`

func Describe() []wit.ToolSpec {
	return []wit.ToolSpec{{
		Name:  "count_words",
		Title: witTypes.Some("Count words"),
		Description: "Counts the words of a text (runs of characters between spaces). Use it " +
			"instead of counting by eye.",
		InputSchema: `{"type": "object", "properties": {
			"text": {"type": "string", "description": "The text to count the words of."}
		}, "required": ["text"], "additionalProperties": false}`,
		OutputSchema: witTypes.Some(`{"type": "object", "properties": {
			"words": {"type": "integer", "description": "How many words."}
		}, "required": ["words"]}`),
		Annotations: wit.Annotations{
			ReadOnly:    witTypes.Some(true),
			Destructive: witTypes.Some(false),
			Idempotent:  witTypes.Some(true),
			OpenWorld:   witTypes.Some(false),
		},
		// What the tool needs from outside (a directory, a host on the network); nothing here.
		Capabilities: []wit.CapabilityRequest{},
	}}
}

type result = witTypes.Result[wit.Outcome, wit.ToolError]

func invalid(format string, values ...any) result {
	message := fmt.Sprintf(format, values...) + "; " + send
	return witTypes.Err[wit.Outcome](wit.MakeToolErrorInvalidArguments(message))
}

func Call(name string, argumentsJSON string, context wit.CallContext) result {
	if name != "count_words" {
		return witTypes.Err[wit.Outcome](wit.MakeToolErrorFailed(fmt.Sprintf("there is no tool %q", name)))
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(argumentsJSON), &args); err != nil {
		return invalid("the arguments are not a JSON object (%v)", err)
	}
	value, present := args["text"]
	text, isText := value.(string)
	if !present {
		return invalid("`text` is missing")
	}
	if !isText {
		return invalid("`text` must be a string, not %v", value)
	}
	words := CountWords(text)
	structured, _ := json.Marshal(map[string]int{"words": words})
	return witTypes.Ok[wit.Outcome, wit.ToolError](wit.MakeOutcomeComplete(wit.ToolResult{
		Content:    []wit.Content{wit.MakeContentText(fmt.Sprintf("%d words", words))},
		Structured: witTypes.Some(string(structured)),
	}))
}
