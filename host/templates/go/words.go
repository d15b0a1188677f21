package export_toolhost_tool_tools

import "strings"

// CountWords is the number of words of text: runs of characters between spaces.
func CountWords(text string) int {
	return len(strings.Fields(text))
}
