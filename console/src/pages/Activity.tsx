import { useMemo, useState } from 'react';
import { gql, useMutation, useQuery, useSubscription } from 'urql';
import { ProjectPicker, useProjectChoice } from '../components/ProjectPicker';
import { Empty, ErrorMessage, Loading, StatusBadge, Time, stepWords, useTitle } from '../components/common';
import type { ActivityItem, ActivityPage } from '../graphql';

const FEEDS = gql<{ operationActivity: ActivityPage; agentActivity: ActivityPage }, { id: string }>`
  query ConsoleActivity($id: ID!) {
    operationActivity(scope: "project", id: $id, limit: "30")
    agentActivity(scope: "project", id: $id, limit: "30")
  }
`;

const LIVE_OPERATIONS = gql<{ operationActivity: ActivityItem }, { projectId: string }>`
  subscription ConsoleLiveOperations($projectId: ID!) {
    operationActivity(projectId: $projectId)
  }
`;

const LIVE_AGENTS = gql<{ agentActivity: ActivityItem }, { projectId: string }>`
  subscription ConsoleLiveAgents($projectId: ID!) {
    agentActivity(projectId: $projectId)
  }
`;

const DECIDE = gql<{ decideApproval: unknown }, { approvalId: string; decision: string; actionHash: string }>`
  mutation ConsoleDecide($approvalId: String!, $decision: String!, $actionHash: String!) {
    decideApproval(approvalId: $approvalId, decision: $decision, actionHash: $actionHash)
  }
`;

type Live = Record<string, ActivityItem>;
const keep = (prev: Live | undefined, item: ActivityItem): Live => ({ ...(prev ?? {}), [item.id]: item });

/** The page's items: what the read answered, each replaced by its latest live version, newest first. */
function merge(read: ActivityItem[], live: Live | undefined): ActivityItem[] {
  const byId = new Map(read.map((i) => [i.id, i]));
  for (const i of Object.values(live ?? {})) byId.set(i.id, i);
  return [...byId.values()].sort((a, b) =>
    (b.updated_at ?? b.created_at ?? '').localeCompare(a.updated_at ?? a.created_at ?? ''),
  );
}

export default function ActivityPage() {
  useTitle('Activity');
  const choice = useProjectChoice();
  return (
    <>
      <h1>Activity</h1>
      <p className="muted">Operations and agent actions of a project, as they happen.</p>
      <ProjectPicker {...choice} />
      {!choice.loaded ? <Loading what="projects" /> : null}
      {choice.loaded && choice.projects.length === 0 ? (
        <Empty>No projects yet. Create a site on the Sites page: its operations appear here live.</Empty>
      ) : null}
      {choice.projectId ? <Feeds key={choice.projectId} projectId={choice.projectId} /> : null}
    </>
  );
}

function Feeds({ projectId }: { projectId: string }) {
  const [{ data, error, fetching }, reexecute] = useQuery({ query: FEEDS, variables: { id: projectId } });
  const [ops] = useSubscription({ query: LIVE_OPERATIONS, variables: { projectId } }, (p: Live | undefined, d) =>
    keep(p, d.operationActivity),
  );
  const [agents] = useSubscription({ query: LIVE_AGENTS, variables: { projectId } }, (p: Live | undefined, d) =>
    keep(p, d.agentActivity),
  );
  const operations = useMemo(() => merge(data?.operationActivity.history?.items ?? [], ops.data), [data, ops.data]);
  const actions = useMemo(() => merge(data?.agentActivity.history?.items ?? [], agents.data), [data, agents.data]);
  const approvals = actions.filter((a) => a.approval?.can_decide);

  if (fetching && !data) return <Loading what="activity" />;
  return (
    <>
      <ErrorMessage error={error} title="The activity could not be read" />
      <ErrorMessage error={ops.error ?? agents.error} title="The live feed stopped" />
      {approvals.length > 0 ? (
        <Approvals items={approvals} onDecided={() => reexecute({ requestPolicy: 'network-only' })} />
      ) : null}
      <section aria-labelledby="ops-h">
        <h2 id="ops-h">Operations</h2>
        {data && operations.length === 0 ? (
          <Empty>No operations yet. Create a recovery point or restart the site on its page: each step shows up here.</Empty>
        ) : null}
        <ActivityList items={operations} />
      </section>
      <section aria-labelledby="agents-h">
        <h2 id="agents-h">Agent actions</h2>
        {data && actions.length === 0 ? (
          <Empty>No agent actions for this project. Actions proposed by agents and tools appear here, with approvals.</Empty>
        ) : null}
        <ActivityList items={actions} />
      </section>
    </>
  );
}

function ActivityList({ items }: { items: ActivityItem[] }) {
  if (items.length === 0) return null;
  return (
    <ol className="feed">
      {items.map((i) => (
        <li key={i.id}>
          <div className="row wrap">
            <strong>{i.title ?? i.action_key ?? stepWords(i.type)}</strong> <StatusBadge status={i.status} />
            {i.current_step ? <span className="step">{stepWords(i.current_step)}</span> : null}
            {i.terminal?.error_code ? <code className="code">{i.terminal.error_code}</code> : null}
          </div>
          <div className="muted small">
            <Time iso={i.updated_at ?? i.created_at} />
            {i.resource ? ` · ${i.resource.type} ${i.resource.id.slice(0, 8)}` : ''}
            {i.tasks && i.tasks.length ? ` · ${i.tasks.map((t) => stepWords(t.name)).join(' → ')}` : ''}
          </div>
          {i.summary ? <p className="small">{i.summary}</p> : null}
        </li>
      ))}
    </ol>
  );
}

function Approvals({ items, onDecided }: { items: ActivityItem[]; onDecided: () => void }) {
  const [res, decide] = useMutation(DECIDE);
  const [notice, setNotice] = useState('');
  return (
    <section aria-labelledby="appr-h" className="panel">
      <h2 id="appr-h">Waiting for your decision</h2>
      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={res.error} />
      <ul className="feed">
        {items.map((i) => (
          <li key={i.id}>
            <strong>{i.title ?? i.action_key}</strong>
            {i.summary ? <p className="small">{i.summary}</p> : null}
            <p className="muted small">
              Expires <Time iso={i.approval?.expires_at} />
            </p>
            <div className="row">
              {(['approved', 'denied'] as const).map((decision) => (
                <button
                  key={decision}
                  type="button"
                  className={decision === 'approved' ? 'primary' : 'danger'}
                  disabled={res.fetching}
                  aria-label={`${decision === 'approved' ? 'Approve' : 'Deny'} ${i.title ?? i.action_key}`}
                  onClick={() => {
                    const a = i.approval!;
                    setNotice('');
                    void decide({ approvalId: a.id, decision, actionHash: a.action_hash }).then((r) => {
                      if (!r.error) {
                        setNotice(`${decision === 'approved' ? 'Approved' : 'Denied'}: ${i.title ?? i.action_key}.`);
                        onDecided();
                      }
                    });
                  }}
                >
                  {decision === 'approved' ? 'Approve' : 'Deny'}
                </button>
              ))}
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
