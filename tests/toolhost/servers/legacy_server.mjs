// A handshake-era (2025-11-25) MCP server on the TypeScript SDK (the one the npm "everything"
// server ships with), answering with protocol-level errors on purpose. It offers no tasks
// capability, so its task-required tool cannot be called.
//
// Tools: picky (JSON-RPC "invalid params" unless word is "please"), broken (JSON-RPC internal
// error), background (execution.taskSupport "required"), echo (a plain answer).
// Run: MCP_SDK=<path to @modelcontextprotocol/sdk/dist/esm> node legacy_server.mjs
const sdk = process.env.MCP_SDK;
const { Server } = await import(`${sdk}/server/index.js`);
const { StdioServerTransport } = await import(`${sdk}/server/stdio.js`);
const { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode } = await import(
  `${sdk}/types.js`
);

const latency = { "io.glyphoxa/latency": { estimated_duration_ms: 5, max_duration_ms: 1000 } };
const word = { type: "object", properties: { word: { type: "string" } }, required: ["word"] };
const nothing = { type: "object", properties: {} };
const tools = [
  { name: "picky", description: "Only says yes to please.", inputSchema: word, _meta: latency },
  { name: "broken", description: "Always a protocol error.", inputSchema: nothing, _meta: latency },
  {
    name: "background",
    description: "Needs task augmentation.",
    inputSchema: nothing,
    execution: { taskSupport: "required" },
    _meta: latency,
  },
  { name: "echo", description: "Echo a word.", inputSchema: word, _meta: latency },
];

const server = new Server({ name: "legacy", version: "0.1.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  if (name === "picky" && args.word !== "please") {
    throw new McpError(ErrorCode.InvalidParams, "say please");
  }
  if (name === "broken") {
    throw new McpError(ErrorCode.InternalError, "database on fire");
  }
  return { content: [{ type: "text", text: String(args.word ?? "ok") }] };
});
await server.connect(new StdioServerTransport());
