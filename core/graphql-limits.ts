import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isListType,
  isObjectType,
  isInterfaceType,
  type ASTVisitor,
  type GraphQLNamedType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { badRequest } from './errors';

/** Deepest selection nesting the router accepts (the deepest committed document nests 6). */
export const MAX_QUERY_DEPTH = 12;
/** Most aliased fields in one document (the REST documents use fewer than 40). */
export const MAX_ALIASES = 100;

const refuse = (code: string, message: string, details: Record<string, unknown>) =>
  new GraphQLError(message, { originalError: badRequest(code, message, details), extensions: { code, status: 400, details } });

function depthOf(set: SelectionSetNode | undefined, ctx: ValidationContext, seen: Set<string>): number {
  if (!set) return 0;
  let max = 0;
  for (const sel of set.selections) {
    // Introspection is bounded by the schema, not by data (and off in production): not counted, so
    // graphql's own `getIntrospectionQuery()` (GraphiQL, codegen, IDEs) passes in development.
    if (sel.kind === Kind.FIELD && (sel.name.value === '__schema' || sel.name.value === '__type')) continue;
    if (sel.kind === Kind.FIELD) max = Math.max(max, sel.selectionSet ? 1 + depthOf(sel.selectionSet, ctx, seen) : 1);
    else if (sel.kind === Kind.INLINE_FRAGMENT) max = Math.max(max, depthOf(sel.selectionSet, ctx, seen));
    else if (!seen.has(sel.name.value)) {
      const frag = ctx.getFragment(sel.name.value);
      const inner = new Set(seen).add(sel.name.value);
      max = Math.max(max, depthOf(frag?.selectionSet, ctx, inner));
    }
  }
  return max;
}

/** Refuses operations nested deeper than MAX_QUERY_DEPTH (400 `query_too_deep`). */
export const depthLimit: ValidationRule = (ctx): ASTVisitor => ({
  OperationDefinition(node) {
    const depth = depthOf(node.selectionSet, ctx, new Set());
    if (depth > MAX_QUERY_DEPTH) {
      ctx.reportError(
        refuse('query_too_deep', `query depth ${depth} exceeds ${MAX_QUERY_DEPTH}`, { max_depth: MAX_QUERY_DEPTH }),
      );
    }
  },
});

/** Refuses documents with more than MAX_ALIASES aliases (400 `too_many_aliases`): alias fan-out is a cheap amplifier. */
export const aliasLimit: ValidationRule = (ctx): ASTVisitor => {
  let aliases = 0;
  return {
    Field(node) {
      if (node.alias) aliases += 1;
    },
    Document: {
      leave() {
        if (aliases > MAX_ALIASES) {
          ctx.reportError(refuse('too_many_aliases', `${aliases} aliases exceed ${MAX_ALIASES}`, { max_aliases: MAX_ALIASES }));
        }
      },
    },
  };
};

/**
 * Most estimated work in one operation (400 `query_too_costly`). Each object field costs 1 times
 * the size of every list above it; a list's size is its `limit`/`first` argument when written in
 * the document, else 25 (the default page), at most 100. A depth and an alias limit alone still
 * let lists nested in lists ask for millions of objects; this bounds the product.
 */
export const MAX_QUERY_COST = 5_000;
const DEFAULT_LIST_SIZE = 25;
const MAX_LIST_SIZE = 100;

function listSize(args: readonly { name: { value: string }; value: { kind: string; value?: string } }[] | undefined): number {
  const arg = args?.find((a) => a.name.value === 'limit' || a.name.value === 'first');
  const n = arg?.value.kind === Kind.INT ? Number(arg.value.value) : DEFAULT_LIST_SIZE;
  return Math.min(Math.max(n, 1), MAX_LIST_SIZE);
}

function costOf(
  set: SelectionSetNode | undefined,
  parent: GraphQLNamedType | undefined | null,
  ctx: ValidationContext,
  multiplier: number,
  seen: Set<string>,
): number {
  if (!set || !parent) return 0;
  let cost = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      const fields = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields() : {};
      // Introspection is bounded by the schema, not by data (and off in production): not counted,
      // so tools' full introspection query still works in development.
      const def = fields[sel.name.value];
      if (!def || !sel.selectionSet) continue;
      const size = isListType(getNullableType(def.type)) ? listSize(sel.arguments as never) : 1;
      cost += multiplier * size + costOf(sel.selectionSet, getNamedType(def.type), ctx, multiplier * size, seen);
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      const on = sel.typeCondition ? ctx.getSchema().getType(sel.typeCondition.name.value) : parent;
      cost += costOf(sel.selectionSet, on, ctx, multiplier, seen);
    } else if (!seen.has(sel.name.value)) {
      const frag = ctx.getFragment(sel.name.value);
      const on = frag ? ctx.getSchema().getType(frag.typeCondition.name.value) : null;
      cost += costOf(frag?.selectionSet, on, ctx, multiplier, new Set(seen).add(sel.name.value));
    }
  }
  return cost;
}

/** Refuses operations whose estimated cost exceeds MAX_QUERY_COST (400 `query_too_costly`). */
export const costLimit: ValidationRule = (ctx): ASTVisitor => ({
  OperationDefinition(node) {
    const schema = ctx.getSchema();
    const root =
      node.operation === 'query'
        ? schema.getQueryType()
        : node.operation === 'mutation'
          ? schema.getMutationType()
          : schema.getSubscriptionType();
    const cost = costOf(node.selectionSet, root, ctx, 1, new Set());
    if (cost > MAX_QUERY_COST) {
      ctx.reportError(
        refuse('query_too_costly', `estimated query cost ${cost} exceeds ${MAX_QUERY_COST}`, {
          cost,
          max_cost: MAX_QUERY_COST,
        }),
      );
    }
  },
});

export const ROUTER_VALIDATION_RULES: ValidationRule[] = [depthLimit, aliasLimit, costLimit];

/** Introspection is for development: off when NODE_ENV is production. */
export const introspectionAllowed = (nodeEnv = process.env.NODE_ENV): boolean => nodeEnv !== 'production';
