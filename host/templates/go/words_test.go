package export_toolhost_tool_tools

// Tests run natively (./test.sh runs them in the module ./build.sh generates).

import (
	"strings"
	"testing"

	wit "wit_component/toolhost_tool_tools"
)

func TestCountWords(t *testing.T) {
	if got := CountWords("one two  three\nfour"); got != 4 {
		t.Errorf("CountWords = %d, want 4", got)
	}
	if got := CountWords("   "); got != 0 {
		t.Errorf("CountWords of blanks = %d, want 0", got)
	}
}

func TestBadArgumentsSayWhatToSend(t *testing.T) {
	for _, arguments := range []string{"not json", "{}", `{"text": 3}`} {
		result := Call("count_words", arguments, wit.CallContext{})
		if result.IsOk() {
			t.Fatalf("%s was accepted", arguments)
		}
		if message := result.Err().InvalidArguments(); !strings.Contains(message, send) {
			t.Errorf("%s: %q does not say what to send", arguments, message)
		}
	}
}
