import type { FastifyInstance } from 'fastify';
import type { Connection } from 'mongoose';
import type { ParseArgsConfig } from 'node:util';
import type { z } from 'zod';
import type { ActivitySource } from './activity-source';
import type { Config } from './config';
import type { EventBus, ReceivedMessage } from './events/event-bus';
import type { Logger } from './logger';
import type { OperationEngine, OperationExecutor } from './operations/engine';
import type { BackgroundWorker } from './periodic-worker';
import type { Ports } from './ports';
import type { Principal } from './principal';
import type { ByteRoute } from './rest-byte-route';
import type { AnyRoute } from './rest-route';
import type { SubgraphDefinition } from './subgraph-kit';

/**
 * The area contract. Each `subgraphs/<area>/index.ts` exports one `AreaDefinition` (made with
 * `defineArea`); `subgraphs/registry.ts` lists them; the composition root (`app/`), the CLI, the
 * bridge's route list and the router's subscription feeds all loop over that list. Adding an area
 * is one folder plus one registry line. See docs/decisions/0006-area-shape.md.
 */

/** What an area is built from: the kernel's dependencies, never another area. */
export interface AreaContext<C = Record<string, never>> {
  /** The area's name, as in the registry. */
  area: string;
  config: Config;
  /** The area's own settings, parsed from the environment with its `config` schema. */
  settings: C;
  conn: Connection;
  bus: EventBus;
  engine: OperationEngine;
  log: Logger;
  /** Kafka topic prefix in force (tests use a unique one). */
  topicPrefix: string;
  /** `${prefix}.<area>.<name>`: this area's physical topic names (docs/contracts.md). */
  topic(name: string): string;
  /** Other areas' offers, read at call time (`ctx.ports.get('projects')`). */
  ports: Ports;
}

/** A Kafka consumer an area runs (where its workers run). */
export interface ConsumerDefinition {
  /** Stable group name suffix; the group is `${prefix}.<area>.<name>`. */
  name: string;
  /** Physical topic names (build them with `ctx.topic` or `ctx.topicPrefix`). */
  topics: string[];
  fromBeginning?: boolean;
  handler: (m: ReceivedMessage<unknown>) => Promise<void>;
}

/**
 * Something that runs in the background where workers run; declared beside `periodicWorker` so that
 * the operation engine's archiver need not import this file (which names the engine's types).
 */
export type { BackgroundWorker };

/** A graphql-ws subscription field fed from a Kafka topic (the router hosts it). */
export interface FeedDefinition<E = unknown, A = Record<string, unknown>> {
  /** The subscription field, e.g. `operationUpdated`. */
  field: string;
  /** The field's SDL inside `type Subscription`, e.g. `operationUpdated(projectId: ID!): OperationUpdate!`. */
  fieldSdl: string;
  /** SDL of the types it returns (shared names must be identical across feeds). */
  typesSdl: string;
  /** Topic name after the prefix, e.g. `operations` or `commerce.events`. */
  topic: string;
  /**
   * Routes an event to the subscribers listening on its key, or on any of its keys (an event can
   * belong to several scopes: its project, its resource type in that project, …).
   */
  keyOfEvent(event: E): string | readonly string[] | null;
  keyOfArgs(args: A): string;
  /**
   * The key scope a subscriber needs (403 `insufficient_scope`; a connection whose key loses it is
   * closed). Default: the declaring area's read scope (`areaScopes`), filled in by the composition root.
   */
  scope?: string;
  /** The refusal a subscriber sees when `authorize` says no (concealed as not found). */
  notFound: { code: string; message: string };
  /**
   * Whether this principal may watch what these arguments select (a refusal ends the subscription):
   * `true` listens on `keyOfArgs(args)`; a list of keys listens on those instead (a scope decided
   * with the principal, e.g. a database's project found through its owning area). A subscriber
   * gets an event once even when several of its keys match.
   */
  authorize(principal: Principal, args: A, ports: Ports): Promise<boolean | readonly string[]>;
  /** The payload sent to the subscriber (default: the event itself). */
  toPayload?(event: E): unknown;
  /** A stable id of the event for de-duplication of at-least-once delivery (default `eventId`/`event_id`). */
  eventId?(event: E): string | undefined;
}

/** A usage error: one sentence on stderr, exit code 2. */
/** A CLI command under `npx platform …` (docs/contracts.md: `--json` prints one JSON object last). */
export interface CliCommand<S> {
  /** The words, e.g. `['commerce', 'stores', 'create']`. */
  words: string[];
  /** Options as in one usage line, e.g. `--domain DOMAIN`. */
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** Options without which the command is a usage error, checked before anything connects. */
  required?: string[];
  /** Returns the object printed (as JSON with `--json`). Throw `CliUsageError` for a usage error. */
  run(args: {
    values: Record<string, string | boolean | string[] | undefined>;
    services: S;
    ctx: AreaContext<any>;
  }): Promise<unknown>;
  /** One human line for the result when `--json` is absent (default: the JSON itself). */
  describe?(result: any): string;
}

export class CliUsageError extends Error {}

/** A local stand-in for an outside system, started when its env variable is unset. */
export interface StandInDefinition {
  name: string;
  /**
   * The env variable that, when set, points at the real system instead (e.g. `MAIL_SMTP_URL`).
   * Stand-ins never run in production: there, an unset variable refuses the start (app/areas.ts).
   */
  env: string;
  /**
   * Secrets shared with the outside system that have a development default (e.g. the webhook
   * secret the stand-in signs with): required when NODE_ENV=production, since a default is public.
   */
  secrets?: string[];
  /** Starts it on loopback; returns the value to put in `env` for this process. */
  start(opts: { config: Config; log: Logger; host: string }): Promise<{ value: string; stop(): Promise<void> }>;
}

/** Raw HTTP outside GraphQL (binary traffic only: uploads, CDN delivery, signed inbound hooks). */
export interface DataPlane<S> {
  /** Routes on the bridge's listener (`{base_url}`). */
  bridge?(app: FastifyInstance, services: S): void | Promise<void>;
  /** Routes on the CDN listener (`{cdn_url}`). */
  cdn?(app: FastifyInstance, services: S): void | Promise<void>;
}

export interface AreaDefinition<S = unknown, C = any, N extends string = string> {
  name: N;
  /** Fixed offset from SUBGRAPH_BASE_PORT; never changes once given, so adding an area shifts nothing. */
  portOffset: number;
  /** The area's env settings (parsed once per process; unknown variables are ignored). */
  config?: z.ZodType<C, z.ZodTypeDef, any>;
  /** Builds the area's services from the kernel's dependencies. No side effects: nothing starts here. */
  services(ctx: AreaContext<C>): S;
  /** The subgraph: type-graphql resolvers and types; `services` is undefined when only the SDL is wanted. */
  subgraph(services: S): Omit<SubgraphDefinition, 'name'>;
  /** Kernel ports this area offers the others. */
  provides?(services: S, ports: Ports): void;
  /** Durable operation executors by operation type (registered where workers run). */
  executors?(services: S): Record<string, OperationExecutor>;
  consumers?(services: S, ctx: AreaContext<C>): ConsumerDefinition[];
  workers?(services: S, ctx: AreaContext<C>): BackgroundWorker[];
  /** REST rows; documents in `subgraphs/<area>/operations/<operation>.graphql`. */
  routes?: AnyRoute[];
  /** OpenAPI descriptions of the `http.bridge` routes no row describes (`subgraphs/<area>/byte-routes.ts`). */
  byteRoutes?: ByteRoute[];
  cli?: CliCommand<S>[];
  feeds?: FeedDefinition<any, any>[];
  standIns?: StandInDefinition[];
  http?: DataPlane<S>;
  /** Events of this area the activity feeds show (the activity area consumes them). */
  activitySources?: ActivitySource<any>[];
}

/** Identity function that keeps the services and settings types of an area definition. */
export function defineArea<S, C = Record<string, never>, const N extends string = string>(
  def: AreaDefinition<S, C, N>,
): AreaDefinition<S, C, N> {
  return def;
}
