import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isPlatformError, notFound, unauthenticated } from '../../../core/errors';
import type { Logger } from '../../../core/logger';
import type { Principal } from '../../../core/principal';
import { ASSETS_PREFIX, type Authenticate, sendError } from '../upload-plane';
import { toApproval } from '../workflows/resolvers';
import type { WorkflowService } from '../workflows/service';
import { GOVERNED_TOOLS, type GovernedTool } from './tools';

/**
 * `{base_url}/api/v1/assets/mcp` (spec 4.3 "any `/mcp`"): a stateless Model Context Protocol
 * endpoint over Streamable HTTP, built with the official SDK. Stateless means one server and one
 * transport per request and no session id: any replica answers any request. The bearer key is
 * checked before the SDK sees the request; each tool then enforces its own declared scope.
 */
export const MCP_PATH = `${ASSETS_PREFIX}/mcp`;
export const MCP_SERVER_INFO = { name: 'platform-assets', version: '1.0.0' };

const text = (value: unknown): CallToolResult['content'] => [{ type: 'text', text: JSON.stringify(value) }];

function serverFor(principal: Principal, workflows: WorkflowService, log: Logger): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, { capabilities: { tools: {} } });
  for (const t of GOVERNED_TOOLS) register(server, t, principal, workflows, log);
  return server;
}

function register(server: McpServer, t: GovernedTool, principal: Principal, workflows: WorkflowService, log: Logger): void {
  server.registerTool(
    t.name,
    {
      title: t.title,
      description: `${t.description} Needs scope ${t.scope}.`,
      inputSchema: t.input,
      annotations: { title: t.title, readOnlyHint: t.readOnly, destructiveHint: false, openWorldHint: false },
      _meta: { 'platform/scope': t.scope, 'platform/requires_approval': !t.readOnly },
    },
    async (args: Record<string, unknown>): Promise<CallToolResult> => {
      try {
        const r = await workflows.callTool(principal, t, args);
        if (r.outcome === 'allowed') {
          const structured = (r.result && typeof r.result === 'object' ? r.result : { value: r.result }) as Record<
            string,
            unknown
          >;
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
          // Never hand an internal message to the client (the SDK would put it in the result).
          log.error({ err: e, tool: t.name }, 'assets MCP tool failed');
          const error = { code: 'internal', message: 'internal error', details: {} };
          return { isError: true, content: text({ error }), structuredContent: { error } };
        }
        const error = { code: e.code, message: e.message, details: e.details };
        return { isError: true, content: text({ error }), structuredContent: { error } };
      }
    },
  );
}

export async function assetsMcpPlane(
  app: FastifyInstance,
  workflows: WorkflowService,
  authenticate: Authenticate,
): Promise<void> {
  app.post(MCP_PATH, { bodyLimit: 1024 * 1024 }, async (req, reply) => {
    let principal: Principal | null;
    try {
      principal = await authenticate(req);
      if (!principal) throw unauthenticated();
    } catch (e) {
      return sendError(reply.header('WWW-Authenticate', 'Bearer'), e, req.log);
    }
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
  });
  // A stateless server keeps no stream to resume and no session to end (MCP: answer 405). The
  // path also reads as `/api/v1/assets/{assetID}` with the id `mcp`: a request that is not MCP's
  // (a GET not asking for an event stream, a DELETE naming no session) gets the asset routes'
  // answer for an id that names no asset, rather than a transport's 405 on an asset path.
  const notAllowed =
    (isMcp: (req: FastifyRequest) => boolean) => async (req: FastifyRequest, reply: import('fastify').FastifyReply) => {
      if (!isMcp(req)) return sendError(reply, notFound('assets.not_found', 'asset not found'), req.log);
      return reply
        .status(405)
        .header('Allow', 'POST')
        .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
    };
  app.get(
    MCP_PATH,
    notAllowed((req) => String(req.headers.accept ?? '').includes('text/event-stream')),
  );
  app.delete(
    MCP_PATH,
    notAllowed((req) => req.headers['mcp-session-id'] !== undefined),
  );
}
