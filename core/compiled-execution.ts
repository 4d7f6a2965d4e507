import { compileQuery, type CompiledQuery, isCompiledQuery } from 'graphql-jit';
import { type DocumentNode, execute, type ExecutionResult, getOperationAST, type GraphQLSchema } from 'graphql';

/**
 * The subgraphs' queries executed by `graphql-jit` (decision 0345): each query document is compiled
 * once per schema and kept; mutations, documents jit refuses and requests whose variables do not
 * coerce go to graphql-js, so those answers and errors stay graphql-js's own. The switch is the
 * process's (the read-path bench sets it per measurement).
 */
// Off by default: with it on, a fuzzed GET /api/v1/assets (empty query values) reached the assets
// service with a null argument and answered 500 (decision 0345, open).
export const compiledExecution = { enabled: false };

/** Compiled documents kept per schema (bounded: cleared when full, as the parsed-document cache). */
const COMPILED_MAX = 2000;

/** A document graphql-js runs (not a query, or jit refused it). */
const GRAPHQL_JS = Symbol('graphql-js');

const compiledBySchema = new WeakMap<GraphQLSchema, Map<string, CompiledQuery | typeof GRAPHQL_JS>>();

export interface ExecuteArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  /** The document's text: the cache key. */
  source: string;
  variableValues?: Record<string, unknown> | null;
  operationName?: string | null;
  contextValue: unknown;
}

function compiled(args: ExecuteArgs): CompiledQuery | typeof GRAPHQL_JS {
  let cache = compiledBySchema.get(args.schema);
  if (!cache) compiledBySchema.set(args.schema, (cache = new Map()));
  const key = `${args.operationName ?? ''}\n${args.source}`;
  let found = cache.get(key);
  if (found === undefined) {
    const operation = getOperationAST(args.document, args.operationName);
    let query: CompiledQuery | ExecutionResult | undefined;
    if (operation?.operation === 'query') {
      try {
        query = compileQuery(args.schema, args.document, args.operationName ?? undefined);
      } catch {
        query = undefined;
      }
    }
    found = query && isCompiledQuery(query) ? query : GRAPHQL_JS;
    if (cache.size >= COMPILED_MAX) cache.clear();
    cache.set(key, found);
  }
  return found;
}

/** Executes a validated document: compiled when the switch is on and jit can, else graphql-js. */
export async function executeDocument(args: ExecuteArgs): Promise<ExecutionResult> {
  const graphqlJs = () =>
    execute({
      schema: args.schema,
      document: args.document,
      variableValues: args.variableValues,
      operationName: args.operationName,
      contextValue: args.contextValue,
    });
  if (!compiledExecution.enabled) return graphqlJs();
  const query = compiled(args);
  if (query === GRAPHQL_JS) return graphqlJs();
  const result = await query.query(undefined, args.contextValue, args.variableValues ?? {});
  // No `data`: the variables did not coerce and no resolver ran; graphql-js words the errors.
  return result.data === undefined && result.errors ? graphqlJs() : result;
}
