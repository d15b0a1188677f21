package export_toolhost_tool_tools

// The tools' progress reports and log lines, to the host (WIT `toolhost:tool/report`, always
// given to a tool). Only in the component: report_other.go stands in for it natively.

import (
	report "wit_component/toolhost_tool_report"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// reportProgress says the call has come `done` of `total` bytes; the host passes it on at a
// bounded rate (an MCP client's progress notifications, a progress bar at `host run`).
func reportProgress(done, total int64, message string) {
	report.Progress(float64(done), witTypes.Some(float64(total)), witTypes.Some(message))
}

// reportLog writes a line for whoever watches the call (not the model).
func reportLog(message string) {
	report.Log(report.Level_Info, message)
}
