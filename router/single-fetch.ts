import {
  type ApolloGateway,
  type Experimental_DidResolveQueryPlanCallback,
  type GraphQLDataSource,
  type GraphQLDataSourceProcessOptions,
} from '@apollo/gateway';
import { trace } from '@opentelemetry/api';
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  getNamedType,
  isAbstractType,
  isObjectType,
  Kind,
  parse,
  print,
} from 'graphql';
import { getVariableValues } from 'graphql/execution/values';
import type { GatewayContext } from './data-sources';

type QueryPlan = Parameters<Experimental_DidResolveQueryPlanCallback>[0]['queryPlan'];
type FetchNode = Extract<NonNullable<QueryPlan['node']>, { kind: 'Fetch' }>;
type SubgraphResponse = Awaited<ReturnType<GraphQLDataSource['process']>>;
/** What a fetch already made for a request answered: its response, or the error it threw. */
type Replay = { response: SubgraphResponse } | { error: unknown };
type RequestContext = Parameters<Experimental_DidResolveQueryPlanCallback>[0]['requestContext'];
/** The options of a fetch the gateway makes for an incoming operation (its request kind is not exported). */
type IncomingFetch = Extract<GraphQLDataSourceProcessOptions<GatewayContext>, { pathInIncomingRequest: unknown }>;
type GatewayExecutor = (requestContext: RequestContext) => ReturnType<ApolloGateway['executor']>;

/**
 * The single-fetch path's switch and counts, for the whole process: operations answered straight
 * from their one fetch, and operations run through the gateway. Off, every operation runs through
 * the gateway (the bench measures both in one process; tests compare their answers).
 */
export const singleFetchPath = { enabled: true, direct: 0, viaGateway: 0 };

/** What a single-fetch operation needs per request: the one fetch and the operation's variables. */
interface Shortcut {
  fetch: FetchNode;
  operation: OperationDefinitionNode;
  /** The gateway's API schema, which checks the variables. */
  apiSchema: GraphQLSchema;
}

/**
 * The single-fetch path of the router (decision 0313). An operation whose query plan is one fetch
 * from one subgraph, and whose fetch selects exactly what the operation selects (same fields, same
 * order, no fragment, no directive, no abstract type, no introspection, no rewrite), gets from the
 * subgraph the very `data` the gateway would shape out of it: the gateway walks the operation again
 * and copies each value (0.46 ms for a 20-item list). Such an operation's answer is the subgraph's
 * `data`, unshaped.
 *
 * Everything else runs through the gateway as before: the first request of each document (which
 * the gateway plans, and whose plan decides), variables the gateway would refuse, a recorded trace
 * (the gateway's own spans stay in it), Apollo's query-plan header, and any answer with errors or
 * without an object as `data`. That last one has already been fetched: the gateway runs with the
 * subgraph's answer replayed to it (once, by `ReplayingDataSource`), so errors are shaped as they
 * always were and nothing is sent twice.
 */
export class SingleFetchGateway {
  private readonly gateway: ApolloGateway;
  private shortcuts = new WeakMap<DocumentNode, Map<string, Shortcut | null>>();
  private readonly sources = new Map<string, GraphQLDataSource<GatewayContext>>();
  private readonly replays = new WeakMap<object, Replay>();
  private gatewayExecutor?: GatewayExecutor;

  /** `build` makes the gateway with the two hooks given: its data sources' wrapper and its plan callback. */
  constructor(
    build: (hooks: {
      wrap: (name: string, source: GraphQLDataSource<GatewayContext>) => GraphQLDataSource<GatewayContext>;
      didResolveQueryPlan: Experimental_DidResolveQueryPlanCallback;
    }) => ApolloGateway,
  ) {
    this.gateway = build({
      wrap: (name, source) => {
        this.sources.set(name, source);
        return new ReplayingDataSource(source, this.replays);
      },
      didResolveQueryPlan: ({ queryPlan, requestContext, operationContext }) => {
        const name = requestContext.request.operationName ?? '';
        let byName = this.shortcuts.get(requestContext.document);
        if (!byName) this.shortcuts.set(requestContext.document, (byName = new Map()));
        if (!byName.has(name)) {
          const { operation, fragments, schema } = operationContext;
          byName.set(name, shortcutOf(queryPlan, operation, fragments, schema));
        }
      },
    });
  }

  onSchemaLoadOrUpdate(callback: Parameters<ApolloGateway['onSchemaLoadOrUpdate']>[0]) {
    return this.gateway.onSchemaLoadOrUpdate((schemaContext) => {
      // Another supergraph: plans, and so shortcuts, are made again.
      this.shortcuts = new WeakMap();
      callback(schemaContext);
    });
  }

  async load(options: Parameters<ApolloGateway['load']>[0]) {
    const loaded = await this.gateway.load(options);
    this.gatewayExecutor = loaded.executor;
    return { ...loaded, executor: (requestContext: RequestContext) => this.execute(requestContext) };
  }

  stop(): Promise<void> {
    return this.gateway.stop();
  }

  private async execute(requestContext: RequestContext) {
    const shortcut = singleFetchPath.enabled ? this.shortcutFor(requestContext) : undefined;
    const source = shortcut && this.sources.get(shortcut.fetch.serviceName);
    if (!shortcut || !source) return this.viaGateway(requestContext);
    const { request, context } = requestContext;
    const definitions = shortcut.operation.variableDefinitions ?? [];
    // The gateway's own check of the variables, before any fetch; it answers the refusals.
    if (definitions.length > 0 && getVariableValues(shortcut.apiSchema, definitions, request.variables ?? {}).errors) {
      return this.viaGateway(requestContext);
    }
    const { fetch } = shortcut;
    const variables: Record<string, unknown> = Object.create(null);
    for (const name of fetch.variableUsages ?? []) {
      const value = request.variables?.[name];
      if (request.variables && Object.hasOwn(request.variables, name) && value !== undefined) variables[name] = value;
    }
    // The request the gateway would send for this fetch (executeQueryPlan's sendOperation).
    let response: SubgraphResponse;
    try {
      response = await source.process({
        kind: 'incoming operation' as IncomingFetch['kind'],
        request: { query: fetch.operation, variables, operationName: fetch.operationName },
        incomingRequestContext: requestContext as IncomingFetch['incomingRequestContext'],
        context: context as GatewayContext,
        document: fetch.operationDocumentNode,
        pathInIncomingRequest: [],
      });
    } catch (error) {
      // The gateway answers a failed fetch (an HTTP error, a refused connection): it gets the same failure.
      this.replays.set(context, { error });
      return this.viaGateway(requestContext);
    }
    const data = response.data;
    if (response.errors || data === null || typeof data !== 'object' || Array.isArray(data)) {
      this.replays.set(context, { response });
      return this.viaGateway(requestContext);
    }
    singleFetchPath.direct++;
    return { data };
  }

  private viaGateway(requestContext: RequestContext) {
    singleFetchPath.viaGateway++;
    return this.gatewayExecutor!(requestContext);
  }

  private shortcutFor(requestContext: RequestContext): Shortcut | null | undefined {
    const found = this.shortcuts.get(requestContext.document)?.get(requestContext.request.operationName ?? '');
    if (!found) return found;
    // A recorded trace keeps the gateway's spans; Apollo's query-plan header keeps its answer.
    if (trace.getActiveSpan()?.isRecording()) return undefined;
    if (requestContext.metrics?.captureTraces) return undefined;
    if (requestContext.request.http?.headers.get('apollo-query-plan-experimental')) return undefined;
    return found;
  }
}

/** A data source that answers a response already fetched for this request, once, instead of fetching. */
class ReplayingDataSource implements GraphQLDataSource<GatewayContext> {
  constructor(
    private readonly inner: GraphQLDataSource<GatewayContext>,
    private readonly replays: WeakMap<object, Replay>,
  ) {}

  process(options: GraphQLDataSourceProcessOptions<GatewayContext>) {
    const replay = this.replays.get(options.context);
    if (replay) {
      this.replays.delete(options.context);
      return 'response' in replay ? Promise.resolve(replay.response) : Promise.reject(replay.error);
    }
    return this.inner.process(options);
  }
}

/**
 * The shortcut of an operation, or null when its answer must be shaped by the gateway: the plan is
 * not one plain fetch, or the fetch does not select exactly what the operation selects.
 */
export function shortcutOf(
  plan: QueryPlan,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  apiSchema: GraphQLSchema,
): Shortcut | null {
  const fetch = plan.node;
  if (fetch?.kind !== 'Fetch') return null;
  if (fetch.requires || fetch.inputRewrites?.length || fetch.outputRewrites?.length || fetch.contextRewrites?.length) return null;
  if (fetch.hasDefers) return null;
  // The planner keeps the fetch's text only (unless told to keep its document too).
  const document = fetch.operationDocumentNode ?? parse(fetch.operation);
  const fetched = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  if (fetched.length !== 1 || fetched[0].operation !== operation.operation || operation.directives?.length) return null;
  const root = apiSchema.getRootType(operation.operation);
  if (!root) return null;
  const fetchedFragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fetchedFragments[d.name.value] = d;
  const asked = fieldsOf(operation.selectionSet, fragments, root);
  const sent = fieldsOf(fetched[0].selectionSet, fetchedFragments, root);
  if (asked === null || asked !== sent) return null;
  return { fetch, operation, apiSchema };
}

/**
 * The fields a selection set selects, in the order of their answer, as one string; fragments on
 * the very type selected are read in place. Null when the gateway's shaping could answer other
 * than the subgraph: a directive, introspection (`__typename` too), an interface or union, a
 * fragment on another type, or a response name selected twice.
 */
function fieldsOf(
  set: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  type: GraphQLObjectType,
): string | null {
  const seen = new Set<string>();
  const out: string[] = [];
  const walk = (selections: SelectionSetNode): boolean => {
    for (const selection of selections.selections) {
      if (selection.directives?.length) return false;
      if (selection.kind !== Kind.FIELD) {
        const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? fragments[selection.name.value] : selection;
        const condition = fragment?.typeCondition?.name.value;
        if (!fragment || (condition !== undefined && condition !== type.name) || !walk(fragment.selectionSet)) return false;
        continue;
      }
      const key = selection.alias?.value ?? selection.name.value;
      const field = type.getFields()[selection.name.value];
      if (seen.has(key) || !field || selection.name.value.startsWith('__')) return false;
      seen.add(key);
      const named = getNamedType(field.type);
      let sub = '';
      if (selection.selectionSet) {
        if (!isObjectType(named)) return false;
        const inner = fieldsOf(selection.selectionSet, fragments, named);
        if (inner === null) return false;
        sub = ` {${inner}}`;
      } else if (isAbstractType(named)) return false;
      out.push(print({ ...selection, selectionSet: undefined }) + sub);
    }
    return true;
  };
  return walk(set) ? out.join(' ') : null;
}
