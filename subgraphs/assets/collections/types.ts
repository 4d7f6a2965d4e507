import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { CollectionDoc, SavedSearchDoc } from './model';

@ObjectType('AssetCollection', { description: 'A named set of asset ids (spec 2.3).' })
export class CollectionType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => [ID]) assetIds!: string[];
  @Field(() => Int, { description: 'Also sent as ETag; send it back in If-Match.' }) revision!: number;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toCollection = (c: CollectionDoc): CollectionType => ({
  id: c._id,
  name: c.name,
  description: c.description ?? null,
  assetIds: c.assetIds ?? [],
  revision: c.revision,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

@ObjectType('AssetCollectionPage')
export class CollectionPageType {
  @Field(() => [CollectionType]) items!: CollectionType[];
  @Field(() => String, { description: 'Empty at the end.' }) nextCursor!: string;
}

@InputType('AssetCollectionInput')
export class CollectionInput {
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => [ID], { nullable: true }) assetIds?: string[] | null;
}

@ObjectType('AssetSavedSearch', { description: 'A named filter object of the assets list (spec 2.3).' })
export class SavedSearchType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => GraphQLJSONObject, { description: 'The list query parameters: filters, `sort`, `direction`.' })
  filter!: Record<string, string>;
  @Field(() => Int, { description: 'Also sent as ETag; send it back in If-Match.' }) revision!: number;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toSavedSearch = (s: SavedSearchDoc): SavedSearchType => ({
  id: s._id,
  name: s.name,
  filter: s.filter ?? {},
  revision: s.revision,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

@ObjectType('AssetSavedSearchPage')
export class SavedSearchPageType {
  @Field(() => [SavedSearchType]) items!: SavedSearchType[];
  @Field(() => String, { description: 'Empty at the end.' }) nextCursor!: string;
}

@InputType('AssetSavedSearchInput')
export class SavedSearchInput {
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) filter?: Record<string, string> | null;
}

@ObjectType('AssetOrganisationDeletion')
export class DeletionType {
  @Field(() => ID) id!: string;
  @Field(() => Boolean) deleted!: boolean;
}
