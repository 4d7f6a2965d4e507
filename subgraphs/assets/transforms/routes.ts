import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { FITS, FORMATS, GRAVITIES, MAX_EDGE, NAME as TRANSFORMATION_NAME } from './transforms';
import { P, str, tag, SCOPES } from '../records';

/** Spec "not shown" shapes: docs/contracts.md (legacy flat form, typed v2 form with an eager policy). */
const edge = z.number().int().min(1).max(MAX_EDGE).nullable().optional();
const fit = z.enum(FITS).optional();
const gravity = z.enum(GRAVITIES).optional();
const format = z.enum(FORMATS).optional();
const quality = z.number().int().min(1).max(100).optional();
const legacyTransformation = z
  .object({
    name: str.regex(TRANSFORMATION_NAME),
    width: edge,
    height: edge,
    fit,
    gravity,
    format,
    quality,
  })
  .strict();
const typedTransformation = z
  .object({
    name: str.regex(TRANSFORMATION_NAME),
    version: z.literal(2),
    definition: z
      .object({
        operations: z.array(z.object({ type: z.literal('resize'), width: edge, height: edge, fit, gravity }).strict()).max(4),
        format,
        quality,
      })
      .strict(),
    eager: z.object({ enabled: z.boolean() }).strict().optional(),
  })
  .strict();
const transformationBody = z.union([typedTransformation, legacyTransformation]);
type TransformationBody = z.infer<typeof transformationBody>;
const transformationVars = (b: TransformationBody) =>
  'version' in b
    ? { name: b.name, version: 2, definition: b.definition, eager: b.eager?.enabled ?? false }
    : {
        name: b.name,
        version: 1,
        definition: {
          operations:
            b.width || b.height ? [{ type: 'resize', width: b.width, height: b.height, fit: b.fit, gravity: b.gravity }] : [],
          format: b.format,
          quality: b.quality,
        },
        eager: false,
      };
const transformBody = z
  .object({
    transformation: str.min(1).max(64).optional(),
    definition: typedTransformation.shape.definition.optional(),
  })
  .strict();
/** Spec 4.3 named transformations and an asset's derivatives (decisions 0023, 0024). */
export const transformRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${P}/transformations`,
    summary: 'Create a transformation (legacy flat fields, or typed v2 definition with an eager policy)',
    tag,
    operation: 'create-transformation',
    body: transformationBody,
    scope: SCOPES.write,
    // 409: a transformation with this name exists.
    errors: [409],
    variables: (r) => transformationVars(r.body),
    select: (d) => d.createAssetTransformation,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/transformations`,
    summary: 'List transformations',
    tag,
    operation: 'list-transformations',
    scope: SCOPES.read,
    select: (d) => d.assetTransformations,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/transformations/{name}`,
    summary: 'Delete a transformation (its derivatives stay until the asset changes)',
    tag,
    operation: 'delete-transformation',
    scope: SCOPES.write,
    derive: { params: '.' },
    select: (d) => d,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/transforms`,
    summary: 'Materialise a definition (by name) or an inline typed definition now',
    tag,
    operation: 'transform-asset',
    body: transformBody,
    scope: SCOPES.write,
    derive: { body: '.', params: 'id' },
    select: (d) => d.transformAsset,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/{assetID}/derivatives`,
    summary: 'Persisted transformation outputs of the asset',
    tag,
    operation: 'asset-derivatives',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetDerivatives,
    status: 200,
    envelope: 'standard',
  }),
];
