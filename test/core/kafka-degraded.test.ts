import type { EventBus } from '../../core/events/event-bus';
import { childLogger } from '../../core/logger';
import { operationFeed } from '../../core/operations/feed';
import { FeedHub } from '../../router/feed-hub';
import { randomBytes } from 'node:crypto';
import { startPlatform } from '../../app/platform';
import { loadConfig } from '../../core/config';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('Kafka unreachable', () => {
  it("the router's feed hub does not hold up start and joins in the background with retry", async () => {
    let failures = 2;
    const subscribed: string[][] = [];
    const bus = {
      ensureTopics: async () => {
        if (failures-- > 0) throw new Error('broker unreachable');
      },
      subscribe: async (o: { topics: string[] }) => {
        subscribed.push(o.topics);
        return { stop: async () => undefined };
      },
    } as unknown as EventBus;
    const hub = new FeedHub(bus, childLogger('test'), [operationFeed as never], 'tkafkadown');
    const started = Date.now();
    await hub.startInBackground({ waitMs: 5, retryMs: 20 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(subscribed).toHaveLength(0);
    const end = Date.now() + 5_000;
    while (subscribed.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    expect(subscribed).toEqual([[`tkafkadown.${operationFeed.topic}`]]);
    await hub.stop();
  });

  describe('/readyz', () => {
    let t: TestPlatform;
    beforeAll(async () => {
      t = await startTestPlatform({}, { workers: false });
    }, 60_000);
    afterAll(async () => t?.stop());

    it('stays ready on MongoDB alone and reports Kafka as degraded', async () => {
      t.platform.config.kafkaBrokers = ['127.0.0.1:1'];
      const res = await t.rest('GET', '/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'ready', checks: { mongodb: 'ok', kafka: 'degraded' } });
    });
  });

  it('the whole platform, workers and consumers included, starts and serves with no broker at all', async () => {
    const id = randomBytes(4).toString('hex');
    const base = loadConfig(process.env);
    const config = loadConfig({
      ...process.env,
      MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_${id}$1`),
      KAFKA_BROKERS: '127.0.0.1:1',
    });
    const started = Date.now();
    const platform = await startPlatform({
      config,
      bridgePort: 0,
      routerPort: 0,
      cdnPort: 0,
      serveSubgraphs: false,
      topicPrefix: `t${id}`,
    });
    try {
      expect(Date.now() - started).toBeLessThan(40_000);
      const { key } = await platform.services.identity.createApiKey({ accountSlug: `kd-${id}`, plan: 'pro' });
      const res = await fetch(`${platform.bridgeUrl}/api/v1/publisher/sites`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'No broker' }),
      });
      // Accepted: the operation and its events wait in MongoDB until the broker answers.
      expect(res.status).toBe(202);
    } finally {
      await platform.conn.dropDatabase().catch(() => undefined);
      await platform.stop();
    }
  }, 90_000);
});
