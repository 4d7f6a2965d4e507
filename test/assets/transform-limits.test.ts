import type { AssetsService } from '../../subgraphs/assets/storage/service';
import type { DerivativeDoc, TransformSpec, Transforms } from '../../subgraphs/assets/transforms/transforms';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * Synchronous image transforms (CDN derivatives, `POST /{id}/transforms`, eager) each decode a whole
 * image in memory: one process runs at most ASSETS_TRANSFORM_CONCURRENCY of them, at most
 * ASSETS_TRANSFORM_ACCOUNT_CONCURRENCY for one account, and another account's transform does not
 * wait behind a busy account's queue. The computation itself is replaced by a timed stand-in that
 * records how many run at once; everything around it (derivative lookup, single flight) is real.
 */
describe('assets transforms: bounded concurrency with a per-account cap', () => {
  let t: TestPlatform;
  let transforms: Transforms;
  beforeAll(async () => {
    t = await startTestPlatform({ ASSETS_TRANSFORM_CONCURRENCY: '3', ASSETS_TRANSFORM_ACCOUNT_CONCURRENCY: '2' });
    transforms = ((t.platform.services as any).assets.assets as AssetsService).transforms;
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await t.stop();
  });

  it('never runs more than the process cap, nor more than the account cap, and serves a second account at once', async () => {
    let running = 0;
    let maxRunning = 0;
    const perAccount = new Map<string, number>();
    const maxPerAccount = new Map<string, number>();
    const starts: string[] = [];
    jest.spyOn(transforms as any, 'compute').mockImplementation((async (key: string, src: any) => {
      const acct = src.asset.accountId as string;
      starts.push(acct);
      running++;
      maxRunning = Math.max(maxRunning, running);
      perAccount.set(acct, (perAccount.get(acct) ?? 0) + 1);
      maxPerAccount.set(acct, Math.max(maxPerAccount.get(acct) ?? 0, perAccount.get(acct)!));
      await new Promise((r) => setTimeout(r, 60));
      running--;
      perAccount.set(acct, perAccount.get(acct)! - 1);
      return { _id: key } as DerivativeDoc;
    }) as any);

    const src = (accountId: string, n: number) => ({
      asset: { _id: `asset-${accountId}-${n}`, accountId } as any,
      version: { number: 1, sha256: `${accountId}-${n}`.padEnd(64, '0') } as any,
      region: 'local-1',
    });
    const spec = (w: number): TransformSpec => ({
      operations: [{ type: 'resize', width: w, height: null, fit: 'cover', gravity: 'centre' as any }],
      format: 'webp',
      quality: 80,
    });
    // A busy account asks for 12 derivatives first; two others ask for 3 each right after.
    const busy = Array.from({ length: 12 }, (_, i) => transforms.materialise(src('busy', i), spec(100 + i)));
    // Until all twelve reached the limiter: two running, ten queued behind the account cap.
    for (let i = 0; i < 200 && transforms.limiter.load.waiting < 10; i++) await new Promise((r) => setTimeout(r, 5));
    expect(transforms.limiter.load).toEqual({ running: 2, waiting: 10, accounts: 1 });
    const others = ['quiet-a', 'quiet-b'].flatMap((a) =>
      Array.from({ length: 3 }, (_, i) => transforms.materialise(src(a, i), spec(200 + i))),
    );
    await Promise.all([...busy, ...others]);

    expect(starts).toHaveLength(18);
    expect(maxRunning).toBe(3);
    expect(maxPerAccount.get('busy')).toBe(2);
    expect(Math.max(maxPerAccount.get('quiet-a')!, maxPerAccount.get('quiet-b')!)).toBeLessThanOrEqual(2);
    // The quiet accounts did not wait for the busy account's twelve.
    // One shared FIFO queue would start them only after all twelve (index 12); the free slot takes
    // them as soon as their derivative lookup is done, while the busy account's queue still waits.
    expect(starts.findIndex((a) => a !== 'busy')).toBeLessThan(8);
    expect(starts.lastIndexOf('busy')).toBe(starts.length - 1);
    // Idle accounts leave nothing behind.
    expect(transforms.limiter.load).toEqual({ running: 0, waiting: 0, accounts: 0 });
  });
});
