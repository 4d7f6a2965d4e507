import { useCallback, useState } from 'react';
import { gql, useMutation, useQuery } from 'urql';
import { BarChart } from '../components/Chart';
import { ProjectPicker, useProjectChoice } from '../components/ProjectPicker';
import {
  Empty,
  ErrorMessage,
  Loading,
  StatusBadge,
  Time,
  describeError,
  useInterval,
  useTitle,
  TableWrap,
} from '../components/common';

interface Environment {
  name: string;
  appUrl: string | null;
  hasClientSecret: boolean;
  hasAutomationToken: boolean;
  hasPublicStorefrontToken: boolean;
  hasPrivateStorefrontToken: boolean;
  hasSessionSecret: boolean;
  memoryMb: number;
  verification: { state: string; errorCode: string | null };
}

const CONNECTION = gql<
  {
    commerceConnection: {
      id: string;
      kind: string;
      storeDomain: string;
      state: string;
      environments: Environment[];
      updatedAt: string;
    };
  },
  { projectId: string }
>`
  query ConsoleCommerceConnection($projectId: ID!) {
    commerceConnection(projectId: $projectId) {
      id
      kind
      storeDomain
      state
      environments {
        name
        appUrl
        hasClientSecret
        hasAutomationToken
        hasPublicStorefrontToken
        hasPrivateStorefrontToken
        hasSessionSecret
        memoryMb
        verification {
          state
          errorCode
        }
      }
      updatedAt
    }
  }
`;

interface Release {
  id: string;
  environment: string;
  status: string;
  previewId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: string;
  url: string | null;
}

const RELEASES = gql<{ commerceReleases: { items: Release[]; nextCursor: string | null } }, { projectId: string }>`
  query ConsoleCommerceReleases($projectId: ID!) {
    commerceReleases(projectId: $projectId, limit: 20) {
      items {
        id
        environment
        status
        previewId
        errorCode
        errorMessage
        createdAt
        url
      }
      nextCursor
    }
  }
`;

const ANALYTICS = gql<
  { commerceAnalytics: { range: string; granularity: string; buckets: { start: string; requests: number; errors: number }[] } },
  { projectId: string; range: string }
>`
  query ConsoleCommerceAnalytics($projectId: ID!, $range: String) {
    commerceAnalytics(projectId: $projectId, range: $range) {
      range
      granularity
      buckets {
        start
        requests
        errors
      }
    }
  }
`;

const PROMOTE = gql<{ commercePromote: { id: string; status: string } }, { projectId: string; previewId: string }>`
  mutation ConsoleCommercePromote($projectId: ID!, $previewId: String!) {
    commercePromote(projectId: $projectId, previewId: $previewId) {
      id
      status
    }
  }
`;

const RETRY = gql<{ commerceRetryRelease: { id: string; status: string } }, { projectId: string; releaseId: string }>`
  mutation ConsoleCommerceRetry($projectId: ID!, $releaseId: ID!) {
    commerceRetryRelease(projectId: $projectId, releaseId: $releaseId) {
      id
      status
    }
  }
`;

const MOVING = new Set(['queued', 'running']);

export default function CommercePage() {
  useTitle('Commerce');
  const choice = useProjectChoice((p) => !p.site);
  return (
    <>
      <h1>Commerce</h1>
      <ProjectPicker {...choice} />
      {!choice.loaded ? <Loading what="projects" /> : null}
      {choice.loaded && choice.projects.length === 0 ? (
        <Empty>
          No projects yet. Create one with <code>npx platform projects create --account NAME --name shop</code>, then connect its
          store here.
        </Empty>
      ) : null}
      {choice.projectId ? <Connection key={choice.projectId} projectId={choice.projectId} /> : null}
    </>
  );
}

function Connection({ projectId }: { projectId: string }) {
  const [{ data, error, fetching }] = useQuery({ query: CONNECTION, variables: { projectId } });
  if (fetching && !data) return <Loading what="the commerce connection" />;
  const notConnected = error && /NOT_FOUND/i.test(describeError(error).code ?? '');
  if (!data) {
    return notConnected ? (
      <Empty>
        This project has no store connected. Connect one with <code>POST /api/v1/projects/{projectId}/commerce/connect</code>{' '}
        (kind, store domain), then set its environments; releases and analytics appear here after.
      </Empty>
    ) : (
      <ErrorMessage error={error} title="The connection could not be read" />
    );
  }
  const c = data.commerceConnection;
  return (
    <>
      <section aria-labelledby="conn-h">
        <h2 id="conn-h">Connection</h2>
        <dl className="facts">
          <dt>Store</dt>
          <dd>{c.storeDomain}</dd>
          <dt>Kind</dt>
          <dd>{c.kind}</dd>
          <dt>State</dt>
          <dd>
            <StatusBadge status={c.state} />
          </dd>
          <dt>Updated</dt>
          <dd>
            <Time iso={c.updatedAt} />
          </dd>
        </dl>
        {c.environments.length === 0 ? (
          <Empty>No environments yet. Set one with PUT …/commerce/environments/production (app URL and tokens).</Empty>
        ) : (
          <TableWrap label="Environments">
            <table>
              <caption>Environments</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Verification</th>
                  <th scope="col" className="wide">
                    App address
                  </th>
                  <th scope="col">Secrets</th>
                  <th scope="col" className="wide">
                    Memory
                  </th>
                </tr>
              </thead>
              <tbody>
                {c.environments.map((e) => (
                  <tr key={e.name}>
                    <th scope="row">{e.name}</th>
                    <td>
                      <StatusBadge status={e.verification.state} />
                      {e.verification.errorCode ? <code className="code"> {e.verification.errorCode}</code> : null}
                    </td>
                    <td className="break wide">{e.appUrl ?? '—'}</td>
                    <td>
                      <Secrets env={e} />
                    </td>
                    <td className="wide">{e.memoryMb} MiB</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </section>
      <Releases projectId={projectId} />
      <Analytics projectId={projectId} />
    </>
  );
}

/** Secrets are write-only: the console says which are set, never a value. */
function Secrets({ env }: { env: Environment }) {
  const list: [string, boolean][] = [
    ['client secret', env.hasClientSecret],
    ['automation token', env.hasAutomationToken],
    ['public storefront token', env.hasPublicStorefrontToken],
    ['private storefront token', env.hasPrivateStorefrontToken],
    ['session secret', env.hasSessionSecret],
  ];
  const set = list.filter(([, v]) => v).map(([n]) => n);
  return <>{set.length ? `set: ${set.join(', ')}` : 'none set'}</>;
}

function Releases({ projectId }: { projectId: string }) {
  const [{ data, error, fetching }, reexecute] = useQuery({ query: RELEASES, variables: { projectId } });
  const refresh = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  const items = data?.commerceReleases.items ?? [];
  useInterval(
    refresh,
    2000,
    items.some((r) => MOVING.has(r.status)),
  );
  const [promoted, promote] = useMutation(PROMOTE);
  const [retried, retry] = useMutation(RETRY);
  const [notice, setNotice] = useState('');
  return (
    <section aria-labelledby="rel-h">
      <h2 id="rel-h">Releases</h2>
      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={error ?? promoted.error ?? retried.error} />
      {fetching && !data ? <Loading what="releases" /> : null}
      {data && items.length === 0 ? (
        <Empty>
          No releases yet. Deploy one with <code>npx platform commerce deploy --project {projectId} --environment preview</code>.
        </Empty>
      ) : null}
      {items.length > 0 ? (
        <TableWrap label="Releases">
          <table>
            <caption className="sr-only">Releases</caption>
            <thead>
              <tr>
                <th scope="col">Release</th>
                <th scope="col">Environment</th>
                <th scope="col">Health</th>
                <th scope="col" className="wide">
                  Created
                </th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.id}>
                  <th scope="row">
                    {r.url ? (
                      <a href={r.url} target="_blank" rel="noreferrer">
                        <code>{r.id.slice(0, 8)}</code>
                      </a>
                    ) : (
                      <code>{r.id.slice(0, 8)}</code>
                    )}
                  </th>
                  <td>{r.environment}</td>
                  <td>
                    <StatusBadge status={r.status} />
                    {r.errorCode ? <code className="code"> {r.errorCode}</code> : null}
                  </td>
                  <td className="wide">
                    <Time iso={r.createdAt} />
                  </td>
                  <td>
                    {r.environment === 'preview' && r.previewId && r.status === 'healthy' ? (
                      <button
                        type="button"
                        disabled={promoted.fetching}
                        onClick={() => {
                          setNotice('');
                          void promote({ projectId, previewId: r.previewId! }).then((x) => {
                            if (!x.error) {
                              setNotice('Promotion started: production follows once the health gate passes.');
                              refresh();
                            }
                          });
                        }}
                      >
                        Promote
                      </button>
                    ) : null}
                    {r.status === 'failed' || r.status === 'degraded' ? (
                      <button
                        type="button"
                        disabled={retried.fetching}
                        onClick={() => {
                          setNotice('');
                          void retry({ projectId, releaseId: r.id }).then((x) => {
                            if (!x.error) refresh();
                          });
                        }}
                      >
                        Retry
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}

function Analytics({ projectId }: { projectId: string }) {
  const [range, setRange] = useState('24h');
  const [{ data, error }] = useQuery({ query: ANALYTICS, variables: { projectId, range } });
  const a = data?.commerceAnalytics;
  const label = (iso: string) =>
    a?.granularity === 'day'
      ? new Date(iso).toLocaleDateString()
      : new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return (
    <section aria-labelledby="an-h">
      <h2 id="an-h">Storefront analytics</h2>
      <div className="row wrap">
        <label htmlFor="an-range">Range</label>
        <select id="an-range" value={range} onChange={(e) => setRange(e.target.value)}>
          <option value="1h">Last hour</option>
          <option value="24h">Last 24 hours</option>
          <option value="7d">Last 7 days</option>
          <option value="30d">Last 30 days</option>
        </select>
      </div>
      <ErrorMessage error={error} title="The analytics could not be read" />
      {a ? (
        <BarChart
          title={`Requests per ${a.granularity}`}
          unit="requests"
          partName="errors"
          bars={a.buckets.map((b) => ({ label: label(b.start), value: b.requests, part: b.errors }))}
        />
      ) : null}
    </section>
  );
}
