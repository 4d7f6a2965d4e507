import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/** A named set of asset ids (spec 2.3 "collections hold asset IDs"), guarded by a revision. */
export interface CollectionDoc {
  _id: string;
  accountId: string;
  name: string;
  description: string | null;
  assetIds: string[];
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A named filter object of the assets list route (spec 2.3 "saved searches hold a filter object"). */
export interface SavedSearchDoc {
  _id: string;
  accountId: string;
  name: string;
  /** The list route's query parameters, snake_case, as the caller sent them (filters, sort, direction). */
  filter: Record<string, string>;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

const collectionSchema = new Schema<CollectionDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    assetIds: { type: [String], default: () => [] },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'asset_collections', versionKey: false, minimize: false },
);
// One name per account (409 on a second); also the list's sort.
collectionSchema.index({ accountId: 1, name: 1 }, { unique: true, name: 'collection_name' });
// Exact keys of the revision-guarded update (decision 0001: an exact unique index avoids a scan).
collectionSchema.index({ _id: 1, revision: 1 }, { unique: true, name: 'collection_revision' });

const savedSearchSchema = new Schema<SavedSearchDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    filter: { type: Schema.Types.Mixed, default: () => ({}) },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'asset_saved_searches', versionKey: false, minimize: false },
);
savedSearchSchema.index({ accountId: 1, name: 1 }, { unique: true, name: 'saved_search_name' });
savedSearchSchema.index({ _id: 1, revision: 1 }, { unique: true, name: 'saved_search_revision' });

export interface OrganisationModels {
  Collection: Model<CollectionDoc>;
  SavedSearch: Model<SavedSearchDoc>;
}

export function organisationModels(conn: Connection): OrganisationModels {
  return {
    Collection: model(conn, 'assets', 'AssetCollection', collectionSchema),
    SavedSearch: model(conn, 'assets', 'AssetSavedSearch', savedSearchSchema),
  };
}
