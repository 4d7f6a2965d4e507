import { createHash, randomBytes } from 'node:crypto';
import mongoose, { type Connection, type Model } from 'mongoose';
import { unauthenticated } from './errors';
import type { Logger } from './logger';
import { insertOne, model } from './mongo';
import type { Principal } from './principal';
import { decryptSecret, encryptSecret } from './secrets';

/** A console session lives 12 hours from sign-in (the cookie's Max-Age says the same). */
export const CONSOLE_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** The cookie that carries the session id (docs/decisions/0280-console-sessions.md). */
export const CONSOLE_SESSION_COOKIE = 'platform_session';
/** How often sessions past their expiry are deleted (they are refused as soon as they expire). */
const PURGE_INTERVAL_MS = 60 * 60 * 1000;
/** Longest API key accepted at sign-in (keys are 69 characters; anything far longer is not one). */
const MAX_KEY_LENGTH = 512;

interface ConsoleSessionRecord {
  /** SHA-256 (hex) of the session id: the id itself is never stored. */
  _id: string;
  /** The API key, sealed (core/secrets.ts) for this record only. */
  sealedKey: string;
  accountId: string;
  keyId: string;
  createdAt: Date;
  expiresAt: Date;
}

const schema = new mongoose.Schema<ConsoleSessionRecord>(
  {
    _id: { type: String, required: true },
    sealedKey: { type: String, required: true },
    accountId: { type: String, required: true },
    keyId: { type: String, required: true },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'console_sessions', versionKey: false },
);

const hashOf = (sessionId: string) => createHash('sha256').update(sessionId).digest('hex');
const aadOf = (hash: string) => `console_sessions:${hash}:apiKey`;

/** A live session: the key it stands for (in memory only) and when it ends. */
export interface OpenSession {
  hash: string;
  key: string;
  expiresAt: Date;
}

/**
 * Console sessions: a person signs in with an API key once and gets a random session id (the
 * cookie); the session acts as that key (same identity check, scopes, limits and audit) until it
 * expires (12 h), is signed out, or the key stops working. Stored by the id's SHA-256, the key
 * sealed with the kernel's sealing: the database holds neither in clear.
 */
export class ConsoleSessions {
  readonly model: Model<ConsoleSessionRecord>;

  constructor(
    conn: Connection,
    /** The identity check of a bearer key (the same one the edge uses). */
    private readonly authenticate: (key: string) => Promise<Principal | null>,
    private readonly ttlMs = CONSOLE_SESSION_TTL_MS,
  ) {
    this.model = model(conn, 'core', 'ConsoleSession', schema);
  }

  /** Whether a sign-in body's key is worth a lookup (a string of sane length). */
  static validKeyShape(key: unknown): key is string {
    return typeof key === 'string' && key.length > 0 && key.length <= MAX_KEY_LENGTH;
  }

  /**
   * Checks the key as a bearer key is checked and opens a session for it; a wrong or revoked key
   * is the API's 401 (`unauthenticated`).
   */
  async signIn(key: string): Promise<{ sessionId: string; principal: Principal; expiresAt: Date }> {
    const principal = ConsoleSessions.validKeyShape(key) ? await this.authenticate(key) : null;
    if (!principal) throw unauthenticated();
    const sessionId = randomBytes(32).toString('base64url');
    const hash = hashOf(sessionId);
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.ttlMs);
    await insertOne(this.model, {
      _id: hash,
      sealedKey: encryptSecret(key, aadOf(hash)),
      accountId: principal.accountId,
      keyId: principal.keyId,
      createdAt: now,
      expiresAt,
    });
    return { sessionId, principal, expiresAt };
  }

  /** The session of a cookie's id, or null when unknown or expired (an expired one is deleted). */
  async open(sessionId: string | undefined): Promise<OpenSession | null> {
    if (!sessionId || sessionId.length > 128) return null;
    const hash = hashOf(sessionId);
    const record = await this.model.findById(hash).lean<ConsoleSessionRecord>();
    if (!record) return null;
    if (record.expiresAt.getTime() <= Date.now()) {
      await this.model.deleteOne({ _id: hash });
      return null;
    }
    let key: string;
    try {
      key = decryptSecret(record.sealedKey, aadOf(hash));
    } catch {
      return null; // sealed under a key no longer configured: the person signs in again
    }
    return { hash, key, expiresAt: record.expiresAt };
  }

  /**
   * Who a live session is: the principal of its key now. A key that stopped working (revoked,
   * account gone) ends the session.
   */
  async principalOf(sessionId: string | undefined): Promise<{ session: OpenSession; principal: Principal } | null> {
    const session = await this.open(sessionId);
    if (!session) return null;
    const principal = await this.authenticate(session.key);
    if (!principal) {
      await this.endByHash(session.hash);
      return null;
    }
    return { session, principal };
  }

  /** Sign-out: the session is deleted (its cookie answers 401 from then on). */
  async end(sessionId: string | undefined): Promise<string | null> {
    if (!sessionId || sessionId.length > 128) return null;
    const hash = hashOf(sessionId);
    await this.endByHash(hash);
    return hash;
  }

  async endByHash(hash: string): Promise<void> {
    await this.model.deleteOne({ _id: hash });
  }

  /** Deletes every session past its expiry; returns how many. */
  async purgeExpired(now = new Date()): Promise<number> {
    const r = await this.model.deleteMany({ expiresAt: { $lte: now } });
    return r.deletedCount ?? 0;
  }

  startPurge(log?: Logger, intervalMs = PURGE_INTERVAL_MS): () => void {
    const tick = () =>
      void this.purgeExpired()
        .then((n) => n > 0 && log?.info({ purged: n }, 'expired console sessions purged'))
        .catch((e) => log?.warn({ err: e }, 'console session purge failed'));
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** The session id of a Cookie header (the first `platform_session` value), or undefined. */
export function sessionIdOf(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== CONSOLE_SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{1,128}$/.test(value) ? value : undefined;
  }
  return undefined;
}
