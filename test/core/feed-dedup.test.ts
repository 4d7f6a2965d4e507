import type { EventBus } from '../../core/events/event-bus';
import { childLogger } from '../../core/logger';
import { FEED_DEDUP_MAX, FeedHub } from '../../router/feed-hub';

describe('feed de-duplication', () => {
  it('is a bounded LRU: past the bound, a recently seen event is still dropped and only the oldest is forgotten', async () => {
    let handler: (m: { value: unknown }) => Promise<void> = async () => undefined;
    const bus = {
      ensureTopics: async () => undefined,
      subscribe: async (o: { handler: typeof handler }) => {
        handler = o.handler;
        return { stop: async () => undefined };
      },
    } as unknown as EventBus;
    const delivered: string[] = [];
    const feed = {
      field: 'f',
      topic: 't',
      keyOfEvent: (e: { eventId: string }) => {
        delivered.push(e.eventId);
        return null;
      },
    };
    const hub = new FeedHub(bus, childLogger('test'), [feed as never], 'tdedup');
    await hub.start();
    for (let i = 0; i <= FEED_DEDUP_MAX + 1; i++) await handler({ value: { eventId: `e${i}` } });
    expect(delivered).toHaveLength(FEED_DEDUP_MAX + 2);
    await handler({ value: { eventId: `e${FEED_DEDUP_MAX}` } }); // seen just before the bound was crossed
    expect(delivered).toHaveLength(FEED_DEDUP_MAX + 2);
    await handler({ value: { eventId: 'e0' } }); // the oldest, forgotten
    expect(delivered).toHaveLength(FEED_DEDUP_MAX + 3);
    await hub.stop();
  });
});
