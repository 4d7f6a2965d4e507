/**
 * Kernel port (additive, declared beside `core/ports.ts` by module augmentation): which account an
 * object-store bucket belongs to. Provided by the Assets area, consumed by the object-store events
 * area, so that a subscription can be created on a bucket that has had no object event yet. Until a
 * provider is wired, object-store events learns buckets from the object events themselves.
 */
export interface ObjectBucketRecord {
  id: string;
  accountId: string;
  name: string;
}

export interface ObjectBucketDirectory {
  /** The bucket with this id, whoever owns it, or null when there is none (deleted buckets: null). */
  findBucket(bucketId: string): Promise<ObjectBucketRecord | null>;
}

declare module './ports' {
  interface KernelPorts {
    objectBuckets: ObjectBucketDirectory;
  }
}
