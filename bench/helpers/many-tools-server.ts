// A stdio MCP server with TOOL_COUNT tools (default 100), for the gateway benchmark's merged
// tools/list (issue 37: 3 × 100 tools). The real MCP SDK's low-level Server; LIST_CHANGED=0 makes
// it not promise list_changed, so the gateway cannot keep its list between requests.
import {Server} from '@modelcontextprotocol/sdk/server/index.js'
import {StdioServerTransport} from '@modelcontextprotocol/sdk/server/stdio.js'
import {CallToolRequestSchema, ListToolsRequestSchema} from '@modelcontextprotocol/sdk/types.js'

const count = Number(process.env.TOOL_COUNT ?? 100)
const tools = Array.from({length: count}, (_, i) => ({
  name: `tool-${String(i).padStart(3, '0')}`,
  description: `Tool number ${i}: does one small thing with its input and says what it did.`,
  inputSchema: {
    type: 'object' as const,
    properties: {message: {type: 'string', description: 'What to work on'}},
    required: ['message'],
  },
  annotations: {readOnlyHint: i % 2 === 0},
}))
const server = new Server(
  {name: 'many-tools', version: '1.0.0'},
  {capabilities: {tools: {listChanged: process.env.LIST_CHANGED !== '0'}}},
)
server.setRequestHandler(ListToolsRequestSchema, async () => ({tools}))
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [
    {type: 'text', text: `${request.params.name}: ${JSON.stringify(request.params.arguments)}`},
  ],
}))
await server.connect(new StdioServerTransport())
