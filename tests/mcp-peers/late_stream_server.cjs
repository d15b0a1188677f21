// An MCP server (the TypeScript SDK's, Streamable HTTP with sessions) whose standalone GET
// stream opens late: it answers the GET a second after it comes. Its one tool asks the client
// a question with `elicitation/create` sent on that stream (a request not tied to the call,
// as the conformance suite's elicitation scenarios send theirs), which the SDK drops when the
// stream is not open yet. A client that calls the tool before its stream is open never hears
// the question and waits for nothing.
//
//     NODE_PATH=<the peers' node_modules> node late_stream_server.cjs   (prints `listening on PORT`)
//
// Tool: ask {}  answers `answered: <the client's answer as JSON>`.
const { createServer } = require("node:http");
const { randomUUID } = require("node:crypto");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { ElicitResultSchema } = require("@modelcontextprotocol/sdk/types.js");

const sessions = new Map();

function session() {
  const server = new McpServer({ name: "late-stream", version: "1.0.0" });
  server.registerTool("ask", { description: "Asks the client for a name." }, async () => {
    const answer = await server.server.request(
      {
        method: "elicitation/create",
        params: {
          message: "Your name?",
          requestedSchema: { type: "object", properties: { name: { type: "string" } } },
        },
      },
      ElicitResultSchema,
    );
    return { content: [{ type: "text", text: `answered: ${JSON.stringify(answer)}` }] };
  });
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  return { server, transport };
}

const http = createServer(async (req, res) => {
  const id = req.headers["mcp-session-id"];
  if (req.method === "GET") {
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (id && sessions.has(id)) {
    await sessions.get(id).handleRequest(req, res);
    return;
  }
  const { server, transport } = session();
  await server.connect(transport);
  await transport.handleRequest(req, res);
});
http.listen(0, "127.0.0.1", () => console.log(`listening on ${http.address().port}`));
