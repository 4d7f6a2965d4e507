import { randomBytes } from 'node:crypto';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';
import { childLogger } from '../../core/logger';
import { FeedHub, feedGroupId } from '../../router/feed-hub';

/**
 * A restarted router resumes its feed from its committed position (docs/areas/spine.md, point 13): an event
 * published while it was down still reaches a subscriber watching when it comes back. Real Kafka.
 */
describe('feed resume', () => {
  const run = randomBytes(4).toString('hex');
  const prefix = `tresume${run}`;
  const topic = `${prefix}.things`;
  const feed = { field: 'thingChanged', topic: 'things', keyOfEvent: (e: { thingId: string }) => e.thingId };
  const bus = createKafkaEventBus({ clientId: `t-resume-${run}` });
  afterAll(async () => bus.close());

  const next = async (it: AsyncIterableIterator<unknown>, ms = 20_000) =>
    Promise.race([
      it.next().then((r) => r.value),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no event')), ms).unref()),
    ]);

  it('delivers what was published while the router was down, when its group is stable', async () => {
    const group = feedGroupId(prefix, `instance-${run}`, 'ignored', 0);
    expect(group).toBe(`${prefix}.router-feed.instance-${run}`);
    const first = new FeedHub(bus, childLogger('test'), [feed as never], prefix, group);
    await first.start();
    const live = first.watch('thingChanged', 'a');
    // A new group starts at the end of the topic once its first fetch resolves that position, so
    // publish until one arrives: from then on the group has a committed position to resume from.
    let seen: unknown;
    for (let i = 0; i < 40 && !seen; i++) {
      await bus.publish([{ topic, key: 'a', value: { thingId: 'a', eventId: `${run}-warm-${i}` } }]);
      seen = await next(live, 500).catch(() => undefined);
    }
    expect(seen).toBeDefined();
    await live.return?.();
    await first.stop();

    // Down: this event is published with no router consuming.
    await bus.publish([{ topic, key: 'a', value: { thingId: 'a', eventId: `${run}-2` } }]);

    const second = new FeedHub(bus, childLogger('test'), [feed as never], prefix, group);
    const resumed = second.watch('thingChanged', 'a');
    await second.start();
    expect(await next(resumed)).toMatchObject({ eventId: `${run}-2` });
    await resumed.return?.();
    await second.stop();
  });

  it('has no stable group for a router on a random port without an instance id', () => {
    expect(feedGroupId('p', undefined, 'host', 0)).toBeUndefined();
    expect(feedGroupId('p', undefined, 'host', 4000)).toBe('p.router-feed.host-4000');
  });
});
