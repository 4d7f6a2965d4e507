import mongoose from 'mongoose';
import { config } from './config';
import { childLogger } from './logger';
import { observeMongo, observesEveryCommand } from './telemetry/mongo';

/**
 * How long an operation waits for a reachable MongoDB before failing: 1.5 s, so a request answers
 * 503 within 2 s when the database is down (spine point 12) instead of hanging.
 */
export const MONGO_SERVER_SELECTION_MS = 1_500;

/** Connections per process and server; the MongoDB-wire servers here serialise per collection anyway. */
const MAX_POOL_SIZE = 20;

/**
 * How long opening a connection keeps trying before it gives up: a process that starts beside a
 * busy or still-starting server waits for it (20 s) instead of failing after one 1.5 s selection.
 */
export const MONGO_STARTUP_WAIT_MS = 20_000;

// mongoose captures a stack trace on every query it runs, only to report where a query that is run
// twice was first run: 0.04 ms per query on the reads measured in decision 0252.
mongoose.set('skipOriginalStackTraces', true);

const SELECTION_FAILED = /^Mongo(ose)?ServerSelectionError$/;

export interface MongoOptions {
  maxPoolSize?: number;
  /** How long an operation waits for a reachable server, in milliseconds. */
  serverSelectionTimeoutMS?: number;
  /** How long opening the connection keeps retrying while no server answers, in milliseconds. */
  startupWaitMs?: number;
}

/**
 * Opens a dedicated connection (never the global mongoose one), so every area and every test can
 * point at its own database. Models are registered on it with `conn.model(...)`.
 */
export async function connectMongo(uri: string = config().mongodbUri, opts: MongoOptions = {}): Promise<mongoose.Connection> {
  const deadline = Date.now() + (opts.startupWaitMs ?? MONGO_STARTUP_WAIT_MS);
  for (;;) {
    const conn = openConnection(uri, opts);
    try {
      await conn.asPromise();
      observeMongo(conn);
      childLogger('mongo').debug({ db: conn.name }, 'connected');
      return conn;
    } catch (err) {
      await conn.close().catch(() => undefined);
      if (!SELECTION_FAILED.test((err as Error).name) || Date.now() >= deadline) throw err;
      childLogger('mongo').warn({ db: conn.name, err: (err as Error).message }, 'no server answered yet; retrying');
    }
  }
}

function openConnection(uri: string, opts: MongoOptions): mongoose.Connection {
  return mongoose.createConnection(uri, {
    autoIndex: true,
    autoCreate: true,
    maxPoolSize: opts.maxPoolSize ?? MAX_POOL_SIZE,
    minPoolSize: 0,
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? MONGO_SERVER_SELECTION_MS,
    // No queueing of commands while disconnected (mongoose would hold them 10 s): fail fast.
    bufferCommands: false,
    // The duration histogram and spans come from ./telemetry/mongo.ts; the driver's command events
    // (which decode every reply twice) only when its wrapper could not be installed, or when the
    // connection string asks for them (`monitorCommands=true`).
    ...(observesEveryCommand() ? {} : { monitorCommands: true }),
  });
}

/**
 * Builds the declared indexes of every model registered on `conn`. Uses `createIndexes` rather than
 * `syncIndexes`, which would drop indexes another process (or a newer version) declared.
 */
export async function ensureIndexes(conn: mongoose.Connection): Promise<void> {
  for (const name of conn.modelNames()) {
    const model = conn.model(name);
    // init() waits for the automatic build (racing it with a drop fails on mongo-java-server).
    await model.init();
    await model.createIndexes();
  }
}

/**
 * Inserts one new document as `Model.create` would — the schema's defaults, casting and validation
 * apply, a duplicate `_id` or unique key throws 11000 — without hydrating a Document and running
 * mongoose's save machinery for it (middleware, a stack-capturing parallel-save guard per call):
 * about 0.8 ms CPU less per insert on the project's machine (docs/decisions/0015-wire-server-hot-paths.md: a site create makes four).
 * Only for schemas with no save middleware (none in this code base has any). Returns what was
 * stored (defaults applied, values cast, unknown fields dropped).
 */
export async function insertOne<T>(model: mongoose.Model<T>, doc: T): Promise<T> {
  const whole = model.applyDefaults({ ...doc } as Parameters<typeof model.applyDefaults>[0]);
  const stored = (await model.validate(whole)) as T;
  await model.insertMany([stored], { lean: true });
  return stored;
}

/** The server refused a write because it would duplicate a unique index key (E11000). */
export function isDuplicateKey(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: number }).code === 11000;
}

/**
 * The model `<area>.<Name>` on this connection, registered on first use. Model names carry their
 * area so two areas can never collide on a name; every schema names its collection explicitly.
 */
export function model<T>(conn: mongoose.Connection, area: string, name: string, schema: mongoose.Schema<T>): mongoose.Model<T> {
  const full = `${area}.${name}`;
  return (conn.models[full] as mongoose.Model<T> | undefined) ?? conn.model<T>(full, schema);
}
