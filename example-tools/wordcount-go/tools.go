// Package export_toolhost_tool_tools implements the WIT interface `toolhost:tool/tools` of tool
// contract 0.2 (wit/tool.wit): the generated bindings (wit_exports.go, built by `xtask bindgen
// go`) call Describe and Call here.
package export_toolhost_tool_tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	wit "wit_component/toolhost_tool_tools"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// tool is one tool: how it is described, which arguments it takes, and what it runs.
type tool struct {
	title        string
	description  string
	schema       string
	example      string // a call, for the messages about bad arguments
	capabilities []wit.CapabilityRequest
	arguments    []string
	run          func(args arguments) (any, error)
}

var readData = wit.CapabilityRequest{
	Capability: wit.MakeCapabilityReadDir("/data"),
	Reason:     "the files to count and list",
}

var tools = map[string]tool{
	"count_words": {
		title: "Word count",
		description: "Counts the lines, words and distinct words of a text file under /data (such " +
			"as /data/report.txt) and lists its most frequent words. Short words are left out " +
			"of the ranking when WORDCOUNT_MIN_LENGTH is set.",
		schema: `{"type": "object", "properties": {
			"path": {"type": "string", "description": "The text file, as the tool sees it, such as /data/report.txt."},
			"top": {"type": "integer", "minimum": 0, "maximum": 100, "description": "How many of the most frequent words to list. Default 10."}
		}, "required": ["path"], "additionalProperties": false}`,
		example: `{"path": "/data/report.txt", "top": 5}`,
		capabilities: []wit.CapabilityRequest{readData, {
			Capability: wit.MakeCapabilityEnv(MinLengthVar),
			Reason:     "the shortest word worth ranking; 1 when unset",
		}},
		arguments: []string{"path", "top"},
		run: func(args arguments) (any, error) {
			path, err := args.text("path")
			if err != nil {
				return nil, err
			}
			top, err := args.integer("top", 10, 0, 100)
			if err != nil {
				return nil, err
			}
			return CountWords(path, top)
		},
	},
	"largest_files": {
		title: "Largest files",
		description: "Lists the largest (biggest) files under a directory in /data, searching all its " +
			"subdirectories, with their sizes in bytes, largest first; also counts all files " +
			"and their total size. Use it to see what takes up space.",
		schema: `{"type": "object", "properties": {
			"dir": {"type": "string", "description": "The directory, as the tool sees it, such as /data or /data/logs."},
			"limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many files to list. Default 10."}
		}, "required": ["dir"], "additionalProperties": false}`,
		example:      `{"dir": "/data", "limit": 5}`,
		capabilities: []wit.CapabilityRequest{readData},
		arguments:    []string{"dir", "limit"},
		run: func(args arguments) (any, error) {
			dir, err := args.text("dir")
			if err != nil {
				return nil, err
			}
			limit, err := args.integer("limit", 10, 1, 100)
			if err != nil {
				return nil, err
			}
			return FindLargestFiles(dir, limit)
		},
	},
}

// readOnly is what both tools say about themselves (MCP's hints): they only read, change
// nothing, and look at the granted directories alone.
var readOnly = wit.Annotations{
	ReadOnly:    witTypes.Some(true),
	Destructive: witTypes.Some(false),
	Idempotent:  witTypes.Some(true),
	OpenWorld:   witTypes.Some(false),
}

// Describe lists the tools.
func Describe() []wit.ToolSpec {
	specs := []wit.ToolSpec{}
	for _, name := range []string{"count_words", "largest_files"} {
		t := tools[name]
		specs = append(specs, wit.ToolSpec{
			Name:         name,
			Title:        witTypes.Some(t.title),
			Description:  t.description,
			InputSchema:  t.schema,
			OutputSchema: witTypes.None[string](),
			Annotations:  readOnly,
			Capabilities: t.capabilities,
		})
	}
	return specs
}

// result is what Call returns: an outcome, or why the call failed.
type result = witTypes.Result[wit.Outcome, wit.ToolError]

// Call runs one tool and returns its result as JSON text.
func Call(name string, argumentsJSON string, context wit.CallContext) result {
	fail := func(err error) result {
		if _, ok := err.(invalidArguments); ok {
			return witTypes.Err[wit.Outcome](wit.MakeToolErrorInvalidArguments(err.Error()))
		}
		return witTypes.Err[wit.Outcome](wit.MakeToolErrorFailed(err.Error()))
	}
	t, ok := tools[name]
	if !ok {
		return fail(invalidArguments{fmt.Sprintf("there is no tool %q; this component offers count_words and largest_files", name)})
	}
	// Every message about bad arguments ends with what to send instead.
	withExample := func(err error) error {
		if invalid, ok := err.(invalidArguments); ok {
			return invalidArguments{fmt.Sprintf("%s; send arguments such as %s", invalid.message, t.example)}
		}
		return err
	}
	args, err := parseArguments(name, argumentsJSON, t.arguments)
	if err != nil {
		return fail(withExample(err))
	}
	value, err := t.run(args)
	if err != nil {
		return fail(withExample(err))
	}
	text, err := json.Marshal(value)
	if err != nil {
		return fail(fmt.Errorf("cannot write the result as JSON: %v", err))
	}
	return witTypes.Ok[wit.Outcome, wit.ToolError](wit.MakeOutcomeComplete(wit.ToolResult{
		Content:    []wit.Content{wit.MakeContentText(string(text))},
		Structured: witTypes.None[string](),
	}))
}

// arguments are a call's arguments, each still JSON, checked one by one as the tool reads them
// (the host validates them against the schema too, but a tool must not rely on that).
type arguments map[string]json.RawMessage

func parseArguments(tool, text string, allowed []string) (arguments, error) {
	var value any
	if err := json.Unmarshal([]byte(text), &value); err != nil {
		return nil, invalidArguments{fmt.Sprintf("the arguments are not valid JSON: %v", err)}
	}
	if _, ok := value.(map[string]any); !ok {
		return nil, invalidArguments{fmt.Sprintf("the arguments must be a JSON object, not %s", kind([]byte(strings.TrimSpace(text))))}
	}
	var args arguments
	if err := json.Unmarshal([]byte(text), &args); err != nil {
		return nil, invalidArguments{fmt.Sprintf("the arguments are not valid JSON: %v", err)}
	}
	for name := range args {
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		if !known {
			return nil, invalidArguments{fmt.Sprintf("%s has no argument %q: leave it out; it takes %s", tool, name, strings.Join(allowed, ", "))}
		}
	}
	return args, nil
}

// kind names the type of a JSON value for messages.
func kind(raw json.RawMessage) string {
	switch {
	case len(raw) == 0:
		return "nothing"
	case raw[0] == '"':
		return "a string"
	case raw[0] == '{':
		return "an object"
	case raw[0] == '[':
		return "an array"
	case raw[0] == 't' || raw[0] == 'f':
		return "a boolean"
	case bytes.Equal(raw, []byte("null")):
		return "null"
	default:
		return "a number"
	}
}

// text reads a required string argument.
func (args arguments) text(name string) (string, error) {
	raw, ok := args[name]
	if !ok {
		return "", invalidArguments{fmt.Sprintf("%q is missing", name)}
	}
	var value string
	if kind(raw) != "a string" || json.Unmarshal(raw, &value) != nil {
		return "", invalidArguments{fmt.Sprintf("%q must be a string, not %s", name, kind(raw))}
	}
	if value == "" {
		return "", invalidArguments{fmt.Sprintf("%q is empty", name)}
	}
	return value, nil
}

// integer reads an optional whole-number argument between min and max.
func (args arguments) integer(name string, fallback, min, max int) (int, error) {
	raw, ok := args[name]
	if !ok {
		return fallback, nil
	}
	if kind(raw) != "a number" {
		return 0, invalidArguments{fmt.Sprintf("%q must be a whole number, not %s", name, kind(raw))}
	}
	var value float64
	if json.Unmarshal(raw, &value) != nil || value != math.Trunc(value) {
		return 0, invalidArguments{fmt.Sprintf("%q must be a whole number, not %s", name, raw)}
	}
	if value < float64(min) || value > float64(max) {
		return 0, invalidArguments{fmt.Sprintf("%q must be from %d to %d, not %v", name, min, max, value)}
	}
	return int(value), nil
}
