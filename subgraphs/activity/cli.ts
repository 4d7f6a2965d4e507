import { type CliCommand, CliUsageError } from '../../core/area';
import { APPROVAL_MODES, type ApprovalMode } from './agent-actions';
import type { ActivityService } from './service';

/** `platform agents act …` (docs/contracts.md): a governed tool call, as an agent would make it. */
export const agentsAct: CliCommand<ActivityService> = {
  words: ['agents', 'act'],
  usage:
    '--account SLUG --project ID --action-key KEY [--approval required|none|standing_policy] [--expires-in SECONDS] [--objective ID]',
  required: ['account', 'project', 'action-key'],
  options: {
    account: { type: 'string' },
    project: { type: 'string' },
    'action-key': { type: 'string' },
    approval: { type: 'string' },
    'expires-in': { type: 'string' },
    objective: { type: 'string' },
  },
  async run({ values, services }) {
    const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
    const account = str('account');
    const project = str('project');
    const actionKey = str('action-key');
    if (!account || !project || !actionKey) throw new CliUsageError('agents act needs --account, --project and --action-key.');
    const approval = str('approval');
    if (approval !== undefined && !(APPROVAL_MODES as string[]).includes(approval)) {
      throw new CliUsageError('--approval must be required, none or standing_policy.');
    }
    const expires = str('expires-in');
    if (expires !== undefined && !/^[0-9]+$/.test(expires))
      throw new CliUsageError('--expires-in must be a whole number of seconds.');
    return services.act({
      accountSlug: account,
      projectId: project,
      actionKey,
      approval: approval as ApprovalMode | undefined,
      expiresInS: expires === undefined ? undefined : Number(expires),
      objectiveId: str('objective'),
      principal: { type: 'cli', id: null },
    });
  },
};
