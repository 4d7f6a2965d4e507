import { isUuid } from '../ids';
import { badRequest } from '../errors';
import { createMemoryEventBus } from './memory-event-bus';
import { outboxMessage, outboxPush } from './outbox';
import { dlqTopic } from './topics';

describe('outboxPush', () => {
  it('fills in event ids and times, in order', () => {
    const now = new Date('2025-01-02T03:04:05Z');
    const frag = outboxPush(
      [
        { topic: 't', key: 'k', payload: { n: 1 } },
        { topic: 't', key: 'k', payload: { n: 2 } },
      ],
      now,
    );
    expect(frag.outbox.$each).toHaveLength(2);
    expect(frag.outbox.$each.map((e) => (e.payload as { n: number }).n)).toEqual([1, 2]);
    for (const e of frag.outbox.$each) {
      expect(isUuid(e.eventId)).toBe(true);
      expect(e.createdAt).toEqual(now);
    }
    expect(frag.outbox.$each[0].eventId).not.toBe(frag.outbox.$each[1].eventId);
  });
});

describe('outboxMessage', () => {
  it('adds the event id to the payload for deduplication', () => {
    const [e] = outboxPush([{ topic: 'x.ops', key: 'p1', payload: { status: 'running' } }]).outbox.$each;
    expect(outboxMessage(e)).toEqual({
      topic: 'x.ops',
      key: 'p1',
      value: { status: 'running', eventId: e.eventId },
      headers: { 'event-id': e.eventId },
    });
  });

  it('wraps a non-object payload', () => {
    const [e] = outboxPush([{ topic: 't', key: 'k', payload: 7 }]).outbox.$each;
    expect(outboxMessage(e).value).toEqual({ value: 7, eventId: e.eventId });
  });
});

describe('memory event bus', () => {
  it('delivers in order, replays from the beginning and dead-letters non-retriable failures', async () => {
    const bus = createMemoryEventBus();
    await bus.publish([{ topic: 't', key: 'k', value: { n: 0 } }]);
    const seen: number[] = [];
    let flaky = 0;
    const sub = await bus.subscribe<{ n: number }>({
      groupId: 'g',
      topics: ['t'],
      fromBeginning: true,
      handler: async (m) => {
        if (m.value.n === 2 && flaky++ < 1) throw new Error('transient');
        if (m.value.n === 3) throw badRequest('bad_event', 'token=abc is wrong');
        seen.push(m.value.n);
      },
    });
    await bus.publish([1, 2, 3, 4].map((n) => ({ topic: 't', key: 'k', value: { n } })));
    await sub.stop();
    expect(seen).toEqual([0, 1, 2, 4]);
    const dlq = bus.log(dlqTopic('t'));
    expect(dlq).toHaveLength(1);
    expect(dlq[0].value).toEqual({ n: 3 });
    expect(dlq[0].headers?.['x-dlq-reason']).not.toContain('abc');
    await bus.close();
  });
});
