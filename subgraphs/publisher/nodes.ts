import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';
import { randomUUID } from 'node:crypto';
import { badRequest } from '../../core/errors';

/** A customer-run machine that hosts sites in `connected_node` mode. */
export interface ConnectedNodeDoc {
  _id: string;
  accountId: string;
  name: string;
  tags: string[];
  createdAt: Date;
}

const nodeSchema = new mongoose.Schema<ConnectedNodeDoc>(
  {
    _id: String,
    accountId: { type: String, required: true, index: true },
    name: { type: String, required: true },
    tags: { type: [String], default: [] },
    createdAt: { type: Date, required: true },
  },
  { collection: 'publisher_connected_nodes', versionKey: false },
);

/** `<key>:<value>`, as used by node selector tags. */
export const NODE_TAG = /^[a-z0-9][a-z0-9._-]{0,62}:[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export class ConnectedNodes {
  readonly model: Model<ConnectedNodeDoc>;
  constructor(conn: Connection) {
    this.model = model(conn, 'publisher', 'ConnectedNode', nodeSchema);
  }

  async register(accountId: string, name: string, tags: string[] = []): Promise<ConnectedNodeDoc> {
    for (const t of tags)
      if (!NODE_TAG.test(t)) throw badRequest('invalid_node_tag', `tag "${t}" is not of the form <key>:<value>`);
    const doc = await this.model.create({ _id: randomUUID(), accountId, name, tags, createdAt: new Date() });
    return doc.toObject();
  }

  /** The node when it exists and belongs to the account; null otherwise (the two are not told apart). */
  async findForAccount(accountId: string, nodeId: string): Promise<ConnectedNodeDoc | null> {
    const node = await this.model.findById(nodeId).lean();
    return node && node.accountId === accountId ? node : null;
  }
}
