import { compileQuery, type CompiledQuery, isCompiledQuery } from 'graphql-jit';
import {
  type DocumentNode,
  execute,
  type ExecutionResult,
  getNamedType,
  getNullableType,
  getOperationAST,
  type GraphQLInputType,
  type GraphQLSchema,
  isAbstractType,
  isInputObjectType,
  isListType,
  Kind,
  type OperationDefinitionNode,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
} from 'graphql';

/**
 * The subgraphs' queries executed by `graphql-jit` (decision 0345): each query document is compiled
 * once per schema and kept; mutations, documents jit refuses or would answer otherwise (jitDiverges),
 * requests whose variables it would read otherwise (inLiterals) and requests whose variables do not
 * coerce go to graphql-js, so those answers and errors stay graphql-js's own; the variables jit runs
 * are read as graphql-js reads them first (asGraphqlJsReads). The switch is the
 * process's (the read-path bench sets it per measurement). The counts, while it is on: requests
 * jit answered, and requests graphql-js answered (one whose variables jit refused counts there).
 */
export const compiledExecution = { enabled: true, compiled: 0, graphqlJs: 0 };

/** Compiled documents kept per schema (bounded: cleared when full, as the parsed-document cache). */
const COMPILED_MAX = 2000;

/** A document graphql-js runs (not a query, jit refused it, or jit would answer it otherwise). */
const GRAPHQL_JS = Symbol('graphql-js');

/** A compiled query and what its variables need before jit runs it. */
interface Compiled {
  query: CompiledQuery;
  /** Each variable whose type holds an input object or a list, with that type. */
  nested: [name: string, type: GraphQLInputType][];
  /**
   * Variables without a default that an input object written in the document takes as a field's
   * value (`filter: { folder: $folder }`). Left out of the request, graphql-js leaves the field out
   * (or gives its default) and jit gives it `null`: such a request goes to graphql-js.
   */
  inLiterals: string[];
}

const compiledBySchema = new WeakMap<GraphQLSchema, Map<string, Compiled | typeof GRAPHQL_JS>>();

export interface ExecuteArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  /** The document's text: the cache key. */
  source: string;
  variableValues?: Record<string, unknown> | null;
  operationName?: string | null;
  contextValue: unknown;
}

function nestedVariables(schema: GraphQLSchema, operation: OperationDefinitionNode): Compiled['nested'] {
  const nested: Compiled['nested'] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (type && (isListType(getNullableType(type)) || isInputObjectType(getNamedType(type)))) {
      nested.push([definition.variable.name.value, type]);
    }
  }
  return nested;
}

/**
 * The abstract type jit may resolve: federation's `_Entity` (its `resolveType` answers the value's
 * `__typename`). jit awaits no `resolveType`, and type-graphql's are async functions, so a document
 * selecting any other union or interface goes to graphql-js.
 */
const JIT_ABSTRACT_TYPES = new Set(['_Entity']);

/**
 * Whether jit would answer `document` otherwise than graphql-js: it selects a field of an abstract
 * type jit cannot resolve, or it has `@skip` or `@include` (jit orders an answer's keys when it
 * compiles, so `{ id @include(if: $no) name id }` answers `id` before `name`; graphql-js after).
 * No document of the platform's own has either.
 */
function jitDiverges(schema: GraphQLSchema, document: DocumentNode): boolean {
  const typeInfo = new TypeInfo(schema);
  let found = false;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const type = typeInfo.getType();
        const named = type && getNamedType(type);
        if (named && isAbstractType(named) && !JIT_ABSTRACT_TYPES.has(named.name)) found = true;
      },
      Directive(directive) {
        if (directive.name.value === 'skip' || directive.name.value === 'include') found = true;
      },
    }),
  );
  return found;
}

/** The variables without a default that a written input object takes as a field's value (document-wide). */
function variablesInLiterals(document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const names = new Set<string>();
  visit(document, {
    ObjectField(field) {
      if (field.value.kind === Kind.VARIABLE) names.add(field.value.name.value);
    },
  });
  const defaulted = new Set(
    (operation.variableDefinitions ?? []).filter((d) => d.defaultValue).map((d) => d.variable.name.value),
  );
  return [...names].filter((name) => !defaulted.has(name));
}

function compiled(args: ExecuteArgs): Compiled | typeof GRAPHQL_JS {
  let cache = compiledBySchema.get(args.schema);
  if (!cache) compiledBySchema.set(args.schema, (cache = new Map()));
  const key = `${args.operationName ?? ''}\n${args.source}`;
  let found = cache.get(key);
  if (found === undefined) {
    const operation = getOperationAST(args.document, args.operationName);
    found = GRAPHQL_JS;
    if (operation?.operation === 'query' && !jitDiverges(args.schema, args.document)) {
      try {
        const query = compileQuery(args.schema, args.document, args.operationName ?? undefined);
        if (isCompiledQuery(query)) {
          found = {
            query,
            nested: nestedVariables(args.schema, operation),
            inLiterals: variablesInLiterals(args.document, operation),
          };
        }
      } catch {
        found = GRAPHQL_JS;
      }
    }
    if (cache.size >= COMPILED_MAX) cache.clear();
    cache.set(key, found);
  }
  return found;
}

/**
 * `value` (of input type `type`) as graphql-js reads it, for jit: an input object's field given as
 * `undefined` is left out (graphql-js takes it as not given: the field's default, or no property),
 * and a list's `undefined` item is `null`. jit reads the first as given as `null` and leaves the
 * second out. In-process callers pass such values (the REST bridge's variables hold every optional
 * query value, `undefined` when absent); JSON never does. Copied only where something changes.
 */
export function asGraphqlJsReads(value: unknown, type: GraphQLInputType): unknown {
  if (value === null || value === undefined) return value;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    const itemType = nullable.ofType as GraphQLInputType;
    if (!Array.isArray(value)) return asGraphqlJsReads(value, itemType);
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const read = item === undefined ? null : asGraphqlJsReads(item, itemType);
      if (read !== item) (copy ??= value.slice())[i] = read;
    }
    return copy ?? value;
  }
  if (!isInputObjectType(nullable) || typeof value !== 'object') return value;
  const fields = nullable.getFields();
  let copy: Record<string, unknown> | undefined;
  for (const [name, item] of Object.entries(value)) {
    // A field the type lacks stays: both refuse it (graphql-js words the error).
    const field = fields[name];
    if (!field) continue;
    if (item === undefined) delete (copy ??= { ...value })[name];
    else {
      const read = asGraphqlJsReads(item, field.type);
      if (read !== item) (copy ??= { ...value })[name] = read;
    }
  }
  return copy ?? value;
}

function jitVariables(nested: Compiled['nested'], given: Record<string, unknown>): Record<string, unknown> {
  let variables = given;
  for (const [name, type] of nested) {
    const value = given[name];
    const read = asGraphqlJsReads(value, type);
    if (read !== value) {
      if (variables === given) variables = { ...given };
      variables[name] = read;
    }
  }
  return variables;
}

/** Executes a validated document: compiled when the switch is on and jit can, else graphql-js. */
export async function executeDocument(args: ExecuteArgs): Promise<ExecutionResult> {
  const graphqlJs = () => {
    if (compiledExecution.enabled) compiledExecution.graphqlJs++;
    return execute({
      schema: args.schema,
      document: args.document,
      variableValues: args.variableValues,
      operationName: args.operationName,
      contextValue: args.contextValue,
    });
  };
  if (!compiledExecution.enabled) return graphqlJs();
  const found = compiled(args);
  if (found === GRAPHQL_JS) return graphqlJs();
  const given = args.variableValues ?? {};
  if (found.inLiterals.some((name) => !Object.hasOwn(given, name))) return graphqlJs();
  const result = await found.query.query(undefined, args.contextValue, jitVariables(found.nested, given));
  // No `data`: the variables did not coerce and no resolver ran; graphql-js words the errors.
  if (result.data === undefined && result.errors) return graphqlJs();
  compiledExecution.compiled++;
  return result;
}
