import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Ctx, Field, Float, ID, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import { canonicalSpec, type DerivativeDoc, type TransformationDoc, type Transforms } from './transforms';
import { requirePrincipal } from '../../../core/principal';

@ObjectType('AssetTransformationEager')
export class EagerType {
  @Field(() => Boolean) enabled!: boolean;
}

@ObjectType('AssetTransformation', { description: 'A named image transformation (its name is the CDN preset).' })
export class TransformationType {
  @Field(() => String) name!: string;
  @Field(() => Int, { description: '1: created in the legacy flat form; 2: typed.' }) version!: number;
  @Field(() => GraphQLJSONObject, { description: '`{operations: [{type, width, height, fit, gravity}], format, quality}`' })
  definition!: Record<string, unknown>;
  @Field(() => EagerType) eager!: EagerType;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AssetDerivative', { description: 'A persisted transformation output.' })
export class DerivativeType {
  @Field(() => ID, { description: 'Hash of the source version bytes and the canonical spec.' }) id!: string;
  @Field(() => ID) assetId!: string;
  @Field(() => Int) version!: number;
  @Field(() => String, { description: 'Compact spec, as in a `/tr/{spec}/` address.' }) spec!: string;
  @Field(() => String) format!: string;
  @Field(() => String) mimeType!: string;
  @Field(() => Int) width!: number;
  @Field(() => Int) height!: number;
  @Field(() => Float) size!: number;
  @Field(() => String) checksum!: string;
  @Field(() => Date) createdAt!: Date;
}

const toTransformation = (t: TransformationDoc): TransformationType => ({
  name: t.name,
  version: t.version,
  definition: t.spec as unknown as Record<string, unknown>,
  eager: { enabled: t.eager },
  createdAt: t.createdAt,
});

const toDerivative = (d: DerivativeDoc): DerivativeType => ({
  id: d._id,
  assetId: d.assetId,
  version: d.version,
  spec: d.spec,
  format: d.format,
  mimeType: d.mimeType,
  width: d.width,
  height: d.height,
  size: d.size,
  checksum: d.sha256,
  createdAt: d.createdAt,
});

/** Thin resolvers over `Transforms` (decisions 0023, 0024). */
@Resolver()
export class AssetTransformsResolver {
  constructor(private readonly svc: { readonly transforms: Transforms }) {}

  @Query(() => [TransformationType])
  async assetTransformations(@Ctx() ctx: RequestContext): Promise<TransformationType[]> {
    return (await this.svc.transforms.list(ctx.principal)).map(toTransformation);
  }

  @Mutation(() => TransformationType)
  async createAssetTransformation(
    @Arg('name', () => String) name: string,
    @Arg('version', () => Int) version: number,
    @Arg('definition', () => GraphQLJSONObject) definition: Record<string, unknown>,
    @Arg('eager', () => Boolean) eager: boolean,
    @Ctx() ctx: RequestContext,
  ): Promise<TransformationType> {
    requirePrincipal(ctx.principal); // a request without a key is a 401 before its definition is read
    const spec = canonicalSpec(definition as Parameters<typeof canonicalSpec>[0]);
    return toTransformation(await this.svc.transforms.define(ctx.principal, name, version, spec, eager));
  }

  @Mutation(() => Boolean)
  async deleteAssetTransformation(@Arg('name', () => String) name: string, @Ctx() ctx: RequestContext): Promise<boolean> {
    await this.svc.transforms.remove(ctx.principal, name);
    return true;
  }

  @Mutation(() => DerivativeType)
  async transformAsset(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('transformation', () => String, { nullable: true }) transformation?: string,
    @Arg('definition', () => GraphQLJSONObject, { nullable: true }) definition?: Record<string, unknown>,
  ): Promise<DerivativeType> {
    requirePrincipal(ctx.principal); // a request without a key is a 401 before its definition is read
    const inline = definition ? canonicalSpec(definition as Parameters<typeof canonicalSpec>[0]) : null;
    return toDerivative(await this.svc.transforms.transform(ctx.principal, id, transformation ?? null, inline));
  }

  @Query(() => [DerivativeType])
  async assetDerivatives(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<DerivativeType[]> {
    return (await this.svc.transforms.derivatives(ctx.principal, id)).map(toDerivative);
  }
}
