import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../../core/principal';
import { tagAsset, transformAsset } from './actions';
import type { AssetsService } from '../storage';
import { assetView } from '../records';

/**
 * The governed automation tools (spec 4.3 `/automation`, `/mcp`). Each declares the one scope it
 * needs; a read-only tool answers at once, any other is recorded as an approval that a person
 * decides (POST /workflows/approvals/{id}/approve), and only then performed.
 */
export interface GovernedTool<A extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  scope: string;
  readOnly: boolean;
  /** Zod shape of the arguments (the MCP SDK publishes it as the tool's JSON schema). */
  input: A;
  perform(assets: AssetsService, p: Principal, args: z.objectOutputType<A, z.ZodTypeAny>): Promise<unknown>;
}

const tool = <A extends z.ZodRawShape>(t: GovernedTool<A>): GovernedTool => t as unknown as GovernedTool;
const assetId = z.string().min(1).max(64).describe('the asset id');

export const GOVERNED_TOOLS: GovernedTool[] = [
  tool({
    name: 'search',
    title: 'Search assets',
    description: 'Find assets by text (key or original name), tag, bucket or MIME type.',
    scope: 'assets:read',
    readOnly: true,
    input: {
      query: z.string().max(200).optional(),
      tag: z.string().max(128).optional(),
      bucket: z.string().max(64).optional(),
      mime_type: z.string().max(127).optional(),
      limit: z.number().int().min(1).max(50).optional(),
    },
    async perform(assets, p, a) {
      const found = await assets.list(p, {
        filter: { query: a.query, tag: a.tag, bucket: a.bucket, mimeType: a.mime_type },
        limit: a.limit ?? 20,
      });
      const cdn = assets.cfg.cdnUrl ?? '';
      return { assets: found.assets.map((x) => assetView(x, cdn)), total: found.total, next_cursor: found.nextCursor };
    },
  }),
  tool({
    name: 'get',
    title: 'Get an asset',
    description: 'One asset record by id.',
    scope: 'assets:read',
    readOnly: true,
    input: { asset_id: assetId },
    async perform(assets, p, a) {
      return assetView(await assets.get(p, a.asset_id), assets.cfg.cdnUrl ?? '');
    },
  }),
  tool({
    name: 'tag',
    title: 'Tag an asset',
    description: 'Add and remove tags on an asset. Needs a person to approve it first.',
    scope: 'assets:write',
    readOnly: false,
    input: {
      asset_id: assetId,
      add: z.array(z.string().min(1).max(128)).max(100).default([]),
      remove: z.array(z.string().min(1).max(128)).max(100).default([]),
    },
    perform: (assets, p, a) => tagAsset(assets, p, a.asset_id, a.add, a.remove),
  }),
  tool({
    name: 'transform',
    title: 'Transform an asset',
    description: 'Materialise a named transformation of an asset. Needs a person to approve it first.',
    // The scope of POST /{assetID}/transforms, which the same Transforms service checks.
    scope: 'assets:write',
    readOnly: false,
    input: { asset_id: assetId, transformation: z.string().min(1).max(64) },
    perform: (assets, p, a) => transformAsset(assets, p, a.asset_id, a.transformation),
  }),
];

export const toolNamed = (name: string) => GOVERNED_TOOLS.find((t) => t.name === name);

/** A tool's arguments: exactly the declared keys (an undeclared one is refused, not dropped). */
const argumentsSchema = (t: GovernedTool) => z.object(t.input).strict();

/** The tool's JSON schema as `tools/list` publishes it (`additionalProperties: false`). */
export const toolInputJsonSchema = (t: GovernedTool): Tool['inputSchema'] =>
  toJsonSchemaCompat(argumentsSchema(t), { strictUnions: true, pipeStrategy: 'input' }) as Tool['inputSchema'];

/** Checks a call's arguments against the tool's schema, as that schema is published. */
export function toolArguments(
  t: GovernedTool,
  args: unknown,
):
  | { ok: true; args: Record<string, unknown> }
  | { ok: false; message: string; details: { issues: { path: string; message: string }[] } } {
  const r = argumentsSchema(t).safeParse(args);
  if (r.success) return { ok: true, args: r.data };
  const issues = r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  return {
    ok: false,
    message: `invalid arguments for tool ${t.name}: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`,
    details: { issues },
  };
}

/** `/automation`'s view of a tool. */
export const toolView = (t: GovernedTool) => ({
  name: t.name,
  title: t.title,
  description: t.description,
  scope: t.scope,
  read_only: t.readOnly,
  requires_approval: !t.readOnly,
});
