import { type Connection, type Model, Schema } from 'mongoose';
import { decodeCursor } from '../../../core/cursors';
import { PlatformError } from '../../../core/errors';
import { findPage } from '../../../core/keyset';
import { model } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import type { AssetsService } from '../storage';
import type { AssetWebhookEvent } from '../webhooks';

/** Spec 8 leaves the page open: 1–100, default 25 (as the activity lists). */
export const EVENTS_PAGE_DEFAULT = 25;
export const EVENTS_PAGE_MAX = 100;

/**
 * One entry of the audit stream (`GET /events`). The entries are the webhook events themselves
 * (webhooks/sources.ts turns every object event and record change into them, with an id derived
 * from the change's), so the stream and the webhooks say the same thing and a redelivered change
 * is stored once (`_id` is that id). `seq` orders the stream: the time it was recorded plus the id,
 * so a page boundary never splits or repeats an entry.
 */
export interface AuditEventDoc {
  _id: string;
  accountId: string;
  type: string;
  assetId: string | null;
  occurredAt: Date;
  recordedAt: Date;
  data: Record<string, unknown>;
}

const auditSchema = new Schema<AuditEventDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    type: { type: String, required: true },
    assetId: { type: String, default: null },
    occurredAt: { type: Date, required: true },
    recordedAt: { type: Date, required: true },
    data: { type: Schema.Types.Mixed, default: () => ({}) },
  },
  { collection: 'asset_audit_events', versionKey: false, minimize: false },
);
auditSchema.index({ accountId: 1, recordedAt: -1, _id: -1 });
auditSchema.index({ accountId: 1, assetId: 1, recordedAt: -1, _id: -1 });

export const auditModel = (conn: Connection): Model<AuditEventDoc> => model(conn, 'assets', 'AuditEvent', auditSchema);

export interface AuditPage {
  events: AuditEventDoc[];
  nextCursor: string;
}

/**
 * The cursor's position. A cursor that is not one of ours, or belongs to another direction or
 * filter, is 422 `assets.invalid_cursor` (a well-formed request naming a position that does not
 * exist, like an unknown id), not a 400.
 */
function cursorOf(cursor: string, binding: string): Record<string, unknown> {
  try {
    return decodeCursor(cursor, binding);
  } catch {
    throw new PlatformError('assets.invalid_cursor', 422, 'the cursor is not valid for this listing');
  }
}

export class AuditStream {
  constructor(
    readonly Event: Model<AuditEventDoc>,
    private readonly assets: AssetsService,
  ) {}

  /** Stores events (a second copy of one is ignored: its id is taken). */
  async record(events: AssetWebhookEvent[]): Promise<void> {
    if (events.length === 0) return;
    const now = new Date();
    const docs: AuditEventDoc[] = events.map((e) => ({
      _id: e.id,
      accountId: e.accountId,
      type: e.type,
      assetId: typeof e.data.asset_id === 'string' ? e.data.asset_id : null,
      occurredAt: e.occurredAt,
      recordedAt: now,
      data: e.data,
    }));
    await this.Event.insertMany(docs, { ordered: false }).catch((e: { code?: number; writeErrors?: { code?: number }[] }) => {
      const errs = e.writeErrors ?? [e];
      if (!errs.every((w) => w.code === 11000)) throw e;
    });
  }

  /** A page of the account's stream, newest first (`asc` for oldest first); the cursor is bound to both. */
  async list(
    p: Principal | null,
    args: { assetId?: string | null; direction?: 'asc' | 'desc' | null; limit?: number | null; cursor?: string | null },
  ): Promise<AuditPage> {
    const { accountId } = this.assets.reader(p);
    const dir = args.direction === 'asc' ? 1 : -1;
    const limit = Math.min(Math.max(args.limit ?? EVENTS_PAGE_DEFAULT, 1), EVENTS_PAGE_MAX);
    const binding = `events:${dir}:${args.assetId ?? ''}`;
    const filter: Record<string, unknown> = { accountId };
    if (args.assetId) filter.assetId = args.assetId;
    const page = await findPage<AuditEventDoc>(this.Event, filter, {
      field: 'recordedAt',
      binding,
      order: dir,
      position: { value: 't', id: 'id', form: 'iso' },
      decode: cursorOf,
      limit,
      cursor: args.cursor,
    });
    return { events: page.items, nextCursor: page.nextCursor ?? '' };
  }
}
