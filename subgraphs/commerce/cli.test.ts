import { CliUsageError, type AreaContext } from '../../core/area';
import { commerceCli } from './cli';
import type { CommerceService } from './service';

const run = (words: string, values: Record<string, string>, services: Partial<CommerceService> = {}) =>
  commerceCli
    .find((c) => c.words.join(' ') === words)!
    .run({ values, services: services as CommerceService, ctx: {} as AreaContext<any> });

describe('commerce CLI usage', () => {
  it('names the missing option in one sentence', async () => {
    await expect(run('commerce stores create', {})).rejects.toThrow(CliUsageError);
    await expect(run('commerce stores emit', { domain: 'a.example' })).rejects.toThrow(/--topic is required/);
    await expect(run('commerce deploy', { project: 'p', environment: 'production', health: 'meh' })).rejects.toThrow(/--health/);
    await expect(run('commerce traffic', { project: 'p', requests: 'ten' })).rejects.toThrow(/--requests must be a whole number/);
    await expect(run('commerce traffic', { project: 'p', requests: '1', errors: '2' })).rejects.toThrow(/--errors/);
  });

  it('deploy prints release_id, and preview_id for a preview', async () => {
    const deploy = jest
      .fn()
      .mockResolvedValue({ _id: 'r1', previewId: 'r1', environment: 'preview', status: 'queued', operationId: 'o1' });
    await expect(run('commerce deploy', { project: 'p', environment: 'preview' }, { deploy } as never)).resolves.toEqual({
      release_id: 'r1',
      preview_id: 'r1',
      environment: 'preview',
      status: 'queued',
      operation_id: 'o1',
    });
    expect(deploy).toHaveBeenCalledWith('p', 'preview', 'healthy');
  });
});
