import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isPlatformError, notFound, unauthenticated } from '../../../core/errors';
import type { Logger } from '../../../core/logger';
import type { Principal } from '../../../core/principal';
import { toApproval } from './resolvers';
import type { WorkflowService } from './service';
import { GOVERNED_TOOLS, type GovernedTool, toolArguments, toolInputJsonSchema } from './mcp-tools';
import { ASSETS_PREFIX, type Authenticate, sendError } from '../planes';

/**
 * `{base_url}/api/v1/assets/mcp` (spec 4.3 "any `/mcp`"): a stateless Model Context Protocol
 * endpoint over Streamable HTTP (MCP 2025-11-25), built on the official SDK's protocol `Server`.
 * Stateless means one server and one transport per request and no session id: any replica answers
 * any request. An `Origin` outside the allowed origins is refused with 403 before anything else
 * (the transport's DNS-rebinding rule); the bearer key is checked before the SDK sees the request;
 * each tool then enforces its own declared scope and refuses arguments its schema does not declare.
 * Decision: docs/decisions/0110-mcp-transport-rules.md.
 */
export const MCP_PATH = `${ASSETS_PREFIX}/mcp`;
export const MCP_SERVER_INFO = { name: 'platform-assets', version: '1.0.0' };

const text = (value: unknown): CallToolResult['content'] => [{ type: 'text', text: JSON.stringify(value) }];
const toolError = (error: { code: string; message: string; details: unknown }): CallToolResult => ({
  isError: true,
  content: text({ error }),
  structuredContent: { error },
});

/** What `tools/list` publishes for one tool (its JSON schema says `additionalProperties: false`). */
const toolListing = (t: GovernedTool): Tool => ({
  name: t.name,
  title: t.title,
  description: `${t.description} Needs scope ${t.scope}.`,
  inputSchema: toolInputJsonSchema(t),
  annotations: { title: t.title, readOnlyHint: t.readOnly, destructiveHint: false, openWorldHint: false },
  _meta: { 'platform/scope': t.scope, 'platform/requires_approval': !t.readOnly },
});

function serverFor(principal: Principal, workflows: WorkflowService, log: Logger): Server {
  // The tool list is fixed, so `tools.listChanged` is not advertised (nothing is ever announced).
  const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: GOVERNED_TOOLS.map(toolListing) }));
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const t = GOVERNED_TOOLS.find((x) => x.name === req.params.name);
    // An unknown tool is a protocol error (JSON-RPC invalid params); everything after it is the tool's.
    if (!t) throw new McpError(ErrorCode.InvalidParams, `Tool ${req.params.name} not found`);
    // Arguments the schema does not allow (an undeclared key, a wrong type) are a tool execution
    // error, so a model can read it and correct the call (MCP 2025-11-25, tools: error handling).
    const parsed = toolArguments(t, req.params.arguments ?? {});
    if (!parsed.ok) return toolError({ code: 'invalid_arguments', message: parsed.message, details: parsed.details });
    return callTool(t, principal, workflows, log, parsed.args);
  });
  return server;
}

async function callTool(
  t: GovernedTool,
  principal: Principal,
  workflows: WorkflowService,
  log: Logger,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  try {
    const r = await workflows.callTool(principal, t, args);
    if (r.outcome === 'allowed') {
      const structured = (r.result && typeof r.result === 'object' ? r.result : { value: r.result }) as Record<string, unknown>;
      return { content: text(r.result), structuredContent: structured };
    }
    const a = toApproval(r.approval!);
    const pending = {
      status: 'approval_required',
      approval_id: a.id,
      action_key: a.actionKey,
      action_hash: a.actionHash,
      decision_path: a.decisionPath,
      expires_at: a.expiresAt.toISOString(),
    };
    return { content: text(pending), structuredContent: pending };
  } catch (e) {
    if (!isPlatformError(e)) {
      // Never hand an internal message to the client.
      log.error({ err: e, tool: t.name }, 'assets MCP tool failed');
      return toolError({ code: 'internal', message: 'internal error', details: {} });
    }
    return toolError({ code: e.code, message: e.message, details: e.details });
  }
}

/**
 * The origins a browser may call the endpoint from: `{base_url}`'s own origin and those listed in
 * `ASSETS_MCP_ALLOWED_ORIGINS`. A request without `Origin` (any non-browser client) passes.
 */
export function originAllowed(origin: string | undefined, baseUrl: string, allowed: readonly string[]): boolean {
  if (origin === undefined) return true;
  const norm = (u: string) => {
    try {
      const o = new URL(u).origin;
      return o === 'null' ? null : o;
    } catch {
      return null;
    }
  };
  const o = norm(origin);
  if (!o) return false;
  return [baseUrl, ...allowed].some((a) => norm(a) === o);
}

const jsonRpcError = (reply: FastifyReply, status: number, message: string) =>
  // A transport-level answer: a JSON-RPC error with no id (there is no request it answers).
  reply.status(status).send({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });

export async function assetsMcpPlane(
  app: FastifyInstance,
  workflows: WorkflowService,
  authenticate: Authenticate,
): Promise<void> {
  const assets = workflows.d.assets;
  // Read at request time: the base URL's port is chosen when the platform starts.
  const refuseOrigin = (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    if (originAllowed(origin, assets.cfg.baseUrl, assets.settings.ASSETS_MCP_ALLOWED_ORIGINS)) return null;
    return jsonRpcError(reply, 403, `Forbidden: origin ${JSON.stringify(origin)} is not allowed`);
  };
  const principals = new WeakMap<FastifyRequest, Principal>();
  app.post(
    MCP_PATH,
    {
      bodyLimit: 1024 * 1024,
      // Origin, then the key, before the body is read (401 comes before a malformed body's 400).
      onRequest: async (req, reply) => {
        const refused = refuseOrigin(req, reply);
        if (refused) return refused;
        try {
          const principal = await authenticate(req);
          if (!principal) throw unauthenticated();
          principals.set(req, principal);
        } catch (e) {
          return sendError(reply.header('WWW-Authenticate', 'Bearer'), e, req.log);
        }
      },
    },
    async (req, reply) => {
      const principal = principals.get(req);
      if (!principal) return sendError(reply, unauthenticated(), req.log);
      const server = serverFor(principal, workflows, req.log as unknown as Logger);
      // Stateless: no session id; JSON answers (no SSE stream) since every tool answers at once.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    },
  );
  // The path also reads as `/api/v1/assets/{assetID}` with the id `mcp`: a request that is not
  // MCP's (a GET not asking for an event stream, a DELETE naming no session) gets the asset routes'
  // answer for an id that names no asset, rather than a transport's answer on an asset path.
  const notMcp = (req: FastifyRequest, reply: FastifyReply) =>
    sendError(reply, notFound('assets.not_found', 'asset not found'), req.log);
  // A stateless server offers no server-to-client stream: 405 to the GET that asks for one.
  app.get(MCP_PATH, async (req, reply) => {
    if (!String(req.headers.accept ?? '').includes('text/event-stream')) return notMcp(req, reply);
    return refuseOrigin(req, reply) ?? jsonRpcError(reply.header('Allow', 'POST'), 405, 'Method not allowed.');
  });
  // It issues no session ids, so any session a DELETE names is unknown: 404 (the answer the
  // transport gives for a session that does not exist or has ended).
  app.delete(MCP_PATH, async (req, reply) => {
    if (req.headers['mcp-session-id'] === undefined) return notMcp(req, reply);
    return refuseOrigin(req, reply) ?? jsonRpcError(reply, 404, 'Session not found');
  });
}
