//go:build !wasip1

package export_toolhost_tool_tools

// Natively (go test) there is no host to report to: the reports are kept for the tests to read.

var reported struct {
	progress [][2]int64
	log      []string
}

func reportProgress(done, total int64, _ string) {
	reported.progress = append(reported.progress, [2]int64{done, total})
}

func reportLog(message string) {
	reported.log = append(reported.log, message)
}
