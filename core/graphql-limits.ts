import { GraphQLError, Kind, type ASTVisitor, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';
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

export const ROUTER_VALIDATION_RULES: ValidationRule[] = [depthLimit, aliasLimit];

/** Introspection is for development: off when NODE_ENV is production. */
export const introspectionAllowed = (nodeEnv = process.env.NODE_ENV): boolean => nodeEnv !== 'production';
