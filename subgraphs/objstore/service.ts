import type { Connection } from 'mongoose';
import type { Ports } from '../../core/ports';
import { BucketDirectory } from './buckets';
import { DeliveryLog } from './deliveries';
import { Fanout } from './fanout';
import { type ObjstoreModels, objstoreModels } from './model';
import { PullQueue } from './pull-queue';
import { PushWorker } from './push-worker';
import type { ObjstoreSettings } from './settings';
import { Subscriptions } from './subscriptions';

/** The object-store events area's services, wired once per process. */
export class ObjstoreService {
  readonly models: ObjstoreModels;
  readonly buckets: BucketDirectory;
  readonly subscriptions: Subscriptions;
  readonly pull: PullQueue;
  readonly deliveries: DeliveryLog;
  readonly fanout: Fanout;
  readonly push: PushWorker;

  constructor(conn: Connection, settings: ObjstoreSettings, ports?: Ports) {
    this.models = objstoreModels(conn);
    this.buckets = new BucketDirectory(this.models, ports);
    this.subscriptions = new Subscriptions(
      this.models,
      this.buckets,
      settings,
      (id) => this.deliveries.unpark(id),
      (bucketId) => this.fanout.forget(bucketId),
    );
    this.pull = new PullQueue(this.models, this.subscriptions, settings);
    this.push = new PushWorker(this.models, this.subscriptions, settings);
    this.deliveries = new DeliveryLog(this.models, this.subscriptions, this.pull, () => this.push.nudge());
    this.fanout = new Fanout(this.models, this.buckets, () => this.push.nudge());
  }
}
