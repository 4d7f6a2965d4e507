import type { EventBus } from '../../core/events/event-bus';
import { childLogger } from '../../core/logger';
import { operationFeed } from '../../core/operations/feed';
import { FeedHub } from '../../router/feed-hub';
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
});
