package export_toolhost_tool_tools

// Tests run natively, without WebAssembly, in the module ./build.sh generates (see README.md):
//   cd target/polyglot/wordcount-go/module
//   WORDCOUNT_TESTDATA=$PWD/../../../../example-tools/wordcount-go/testdata GOPROXY=off go test ./...

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	wit "wit_component/toolhost_tool_tools"
)

// testdata is example-tools/wordcount-go/testdata: the tests run in a copy of this directory.
func testdata(t *testing.T) string {
	dir := os.Getenv("WORDCOUNT_TESTDATA")
	if dir == "" {
		t.Skip("set WORDCOUNT_TESTDATA to example-tools/wordcount-go/testdata")
	}
	return dir
}

func errorOf(t *testing.T, name, args string) (uint8, string) {
	t.Helper()
	result := Call(name, args, wit.CallContext{})
	if result.IsOk() {
		t.Fatalf("%s %s succeeded: %+v", name, args, result.Ok())
	}
	err := result.Err()
	if err.Tag() == wit.ToolError_InvalidArguments {
		return err.Tag(), err.InvalidArguments()
	}
	return err.Tag(), err.Failed()
}

func TestBadArgumentsAreInvalidArguments(t *testing.T) {
	cases := map[string]string{
		`not json`:                       "not valid JSON",
		`[1, 2]`:                         "must be a JSON object, not an array",
		`null`:                           "must be a JSON object, not null",
		`{}`:                             `"path" is missing`,
		`{"path": 5}`:                    `"path" must be a string, not a number`,
		`{"path": ""}`:                   `"path" is empty`,
		`{"path": "/x", "top": "3"}`:     `"top" must be a whole number, not a string`,
		`{"path": "/x", "top": 2.5}`:     `"top" must be a whole number, not 2.5`,
		`{"path": "/x", "top": 1000}`:    `"top" must be from 0 to 100`,
		`{"path": "/x", "colour": true}`: `count_words has no argument "colour"`,
	}
	for args, want := range cases {
		tag, message := errorOf(t, "count_words", args)
		if tag != wit.ToolError_InvalidArguments || !strings.Contains(message, want) {
			t.Errorf("count_words %s: got (%d) %q, want invalid-arguments containing %q", args, tag, message, want)
		}
	}
	if tag, _ := errorOf(t, "no_such_tool", `{}`); tag != wit.ToolError_InvalidArguments {
		t.Errorf("an unknown tool is not invalid-arguments")
	}
}

func TestMissingFilesFail(t *testing.T) {
	tag, message := errorOf(t, "count_words", `{"path": "/no/such/file.txt"}`)
	if tag != wit.ToolError_Failed || !strings.Contains(message, "cannot read /no/such/file.txt") {
		t.Errorf("got (%d) %q", tag, message)
	}
}

func TestCountWords(t *testing.T) {
	t.Setenv(MinLengthVar, "5")
	count, err := CountWords(filepath.Join(testdata(t), "pangrams.txt"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if count.Lines != 4 || count.Words != 29 || count.MinLength != 5 {
		t.Errorf("got %+v", count)
	}
	if len(count.TopWords) != 1 || count.TopWords[0] != (WordTally{"quick", 2}) {
		t.Errorf("top words: got %+v", count.TopWords)
	}
	if last := reported.log[len(reported.log)-1]; !strings.Contains(last, "words of 5 letters and more") {
		t.Errorf("the log does not say which words are ranked: %q", last)
	}
	t.Setenv(MinLengthVar, "zero")
	if _, err := CountWords(filepath.Join(testdata(t), "pangrams.txt"), 1); err == nil {
		t.Errorf("a bad %s was accepted", MinLengthVar)
	}
}

func TestCountWordsReportsProgressThroughALargeFile(t *testing.T) {
	t.Setenv(MinLengthVar, "")
	line := "the quick brown fox jumps over the lazy dog\n"
	path := filepath.Join(t.TempDir(), "large.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	reported.progress = nil
	count, err := CountWords(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(line) * 10000)
	if count.Words != 90000 || count.TopWords[0] != (WordTally{"the", 20000}) {
		t.Errorf("counted in pieces: got %+v", count)
	}
	progress := reported.progress
	if len(progress) < 6 || progress[len(progress)-1] != [2]int64{size, size} {
		t.Fatalf("progress through %d bytes: %v", size, progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i][0] <= progress[i-1][0] {
			t.Errorf("progress went back: %v", progress)
		}
	}
}

func TestLargestFiles(t *testing.T) {
	found, err := FindLargestFiles(testdata(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if found.TotalFiles != 3 || len(found.Files) != 2 || filepath.Base(found.Files[0].Path) != "pangrams.txt" {
		t.Errorf("got %+v", found)
	}
}
