import { unauthenticated } from '../core/errors';
import { rotatingToken } from './hosted';

/**
 * The in-process hosted agent's authentication across a token rotation: calls refused together all
 * retry with the token now on the record. Before, only the first to learn of it did; the others took
 * their refusal for a revoked node and the agent stopped (a full run's node-tokens test saw it).
 */
describe('rotatingToken', () => {
  const node = { _id: 'hosted' };
  const accepts = (valid: () => string) => async (token: string) => {
    await new Promise((r) => setTimeout(r, 5));
    if (token !== valid()) throw unauthenticated('node token refused');
    return node;
  };

  it('lets every call refused together retry with the rotated token', async () => {
    let valid = 'old';
    const auth = rotatingToken(
      'old',
      accepts(() => valid),
      async () => {
        await new Promise((r) => setTimeout(r, 10));
        return valid;
      },
    );
    expect(await auth()).toBe(node);
    valid = 'new';
    await expect(Promise.all([auth(), auth(), auth()])).resolves.toEqual([node, node, node]);
    expect(await auth()).toBe(node);
  });

  it('gives the refusal back when the record holds no other token (a revoked node)', async () => {
    const auth = rotatingToken(
      'old',
      accepts(() => 'other'),
      async () => 'old',
    );
    await expect(auth()).rejects.toMatchObject({ status: 401 });
    const none = rotatingToken(
      'old',
      accepts(() => 'other'),
      async () => null,
    );
    await expect(none()).rejects.toMatchObject({ status: 401 });
  });
});
