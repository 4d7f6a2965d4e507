import { useCallback, useId, useState, type FormEvent } from 'react';
import { gql, useMutation, useQuery } from 'urql';
import { api } from '../api';
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
  configPath: string | null;
  configName: string | null;
  clientId: string | null;
  scopes: string | null;
  storefrontId: string | null;
  customerAccountClientId: string | null;
  customerAccountUrl: string | null;
  hasClientSecret: boolean;
  hasAutomationToken: boolean;
  hasPublicStorefrontToken: boolean;
  hasPrivateStorefrontToken: boolean;
  hasCustomerAccountSecret: boolean;
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
        configPath
        configName
        clientId
        scopes
        storefrontId
        customerAccountClientId
        customerAccountUrl
        hasClientSecret
        hasAutomationToken
        hasPublicStorefrontToken
        hasPrivateStorefrontToken
        hasCustomerAccountSecret
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
  const [{ data, error, fetching }, reexecuteConnection] = useQuery({ query: CONNECTION, variables: { projectId } });
  const refreshConnection = useCallback(() => reexecuteConnection({ requestPolicy: 'network-only' }), [reexecuteConnection]);
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
      <section aria-labelledby="env-edit-h">
        <h2 id="env-edit-h">Edit environments</h2>
        <p className="muted small">
          Saving sends every field below: a field left empty is cleared. Secrets are write-only: they are never shown, and a
          secret left empty keeps the stored one. A changed credential resets the verification to pending.
        </p>
        {(c.kind === 'app' ? APP_ENVIRONMENTS : STOREFRONT_ENVIRONMENTS).map((name) => (
          <EnvironmentForm
            key={name}
            projectId={projectId}
            kind={c.kind}
            name={name}
            env={c.environments.find((e) => e.name === name) ?? null}
            onSaved={refreshConnection}
          />
        ))}
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
    ['customer account secret', env.hasCustomerAccountSecret],
    ['session secret', env.hasSessionSecret],
  ];
  const set = list.filter(([, v]) => v).map(([n]) => n);
  return <>{set.length ? `set: ${set.join(', ')}` : 'none set'}</>;
}

const APP_ENVIRONMENTS = ['development', 'production'] as const;
const STOREFRONT_ENVIRONMENTS = ['development', 'production', 'preview'] as const;

type FieldKey =
  | 'configPath'
  | 'configName'
  | 'appUrl'
  | 'clientId'
  | 'scopes'
  | 'storefrontId'
  | 'customerAccountClientId'
  | 'customerAccountUrl';
type SecretFlag =
  | 'hasClientSecret'
  | 'hasAutomationToken'
  | 'hasPublicStorefrontToken'
  | 'hasPrivateStorefrontToken'
  | 'hasCustomerAccountSecret'
  | 'hasSessionSecret';

/** The environment bodies of the PUT route (docs/areas/commerce.md), by connection kind: REST name, GraphQL name, label. */
const FIELDS: Record<string, [string, FieldKey, string][]> = {
  app: [
    ['config_path', 'configPath', 'Config path'],
    ['config_name', 'configName', 'Config name'],
    ['app_url', 'appUrl', 'App address'],
    ['client_id', 'clientId', 'Client ID'],
    ['scopes', 'scopes', 'Scopes'],
  ],
  storefront: [
    ['app_url', 'appUrl', 'App address'],
    ['storefront_id', 'storefrontId', 'Storefront ID'],
    ['customer_account_client_id', 'customerAccountClientId', 'Customer account client ID'],
    ['customer_account_url', 'customerAccountUrl', 'Customer account address'],
  ],
};
const SECRET_FIELDS: Record<string, [string, SecretFlag, string][]> = {
  app: [
    ['client_secret', 'hasClientSecret', 'Client secret'],
    ['automation_token', 'hasAutomationToken', 'Automation token'],
  ],
  storefront: [
    ['public_storefront_token', 'hasPublicStorefrontToken', 'Public storefront token'],
    ['private_storefront_token', 'hasPrivateStorefrontToken', 'Private storefront token'],
    ['customer_account_secret', 'hasCustomerAccountSecret', 'Customer account secret'],
    ['session_secret', 'hasSessionSecret', 'Session secret'],
  ],
};

/**
 * One environment, saved with `PUT …/commerce/environments/{name}`. The route replaces the non-secret
 * fields (an omitted one is cleared), so the form sends them all, prefilled with the stored values; a
 * secret omitted keeps the stored one, so only the secrets typed in are sent, and none is ever shown.
 */
function EnvironmentForm({
  projectId,
  kind,
  name,
  env,
  onSaved,
}: {
  projectId: string;
  kind: string;
  name: string;
  env: Environment | null;
  onSaved: () => void;
}) {
  const id = useId();
  const fields = FIELDS[kind] ?? [];
  const secretFields = SECRET_FIELDS[kind] ?? [];
  const initial = () => Object.fromEntries(fields.map(([rest, gqlName]) => [rest, env?.[gqlName] ?? '']));
  const [values, setValues] = useState<Record<string, string>>(initial);
  const [memory, setMemory] = useState(env ? String(env.memoryMb) : '');
  const [secrets, setSecrets] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setNotice('');
    try {
      const body: Record<string, string | number | null> = {};
      for (const [rest] of fields) body[rest] = values[rest]?.trim() ? values[rest].trim() : null;
      body.memory_mb = memory.trim() ? Number(memory.trim()) : null;
      for (const [rest] of secretFields) if (secrets[rest]) body[rest] = secrets[rest];
      await api(`/api/v1/projects/${encodeURIComponent(projectId)}/commerce/environments/${name}`, { method: 'PUT', body });
      setSecrets({});
      setNotice(`The ${name} environment was saved.`);
      onSaved();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel stack" onSubmit={submit} aria-labelledby={`${id}-h`}>
      <h3 id={`${id}-h`}>
        {name}
        {env ? null : <span className="muted small"> (not set yet)</span>}
      </h3>
      {fields.map(([rest, , label]) => (
        <span key={rest} className="stack tight">
          <label htmlFor={`${id}-${rest}`}>{label}</label>
          <input
            id={`${id}-${rest}`}
            type="text"
            maxLength={2048}
            value={values[rest] ?? ''}
            onChange={(e) => setValues((v) => ({ ...v, [rest]: e.target.value }))}
          />
        </span>
      ))}
      <span className="stack tight">
        <label htmlFor={`${id}-memory`}>Memory limit (MiB)</label>
        <input
          id={`${id}-memory`}
          type="number"
          min={128}
          step={1}
          value={memory}
          placeholder="512"
          aria-describedby={`${id}-memory-hint`}
          onChange={(e) => setMemory(e.target.value)}
        />
        <span id={`${id}-memory-hint`} className="muted small">
          Empty: the default, 512 MiB. A release keeps the limit it was created with.
        </span>
      </span>
      {secretFields.map(([rest, flag, label]) => {
        const isSet = env?.[flag] ?? false;
        return (
          <span key={rest} className="stack tight">
            <label htmlFor={`${id}-${rest}`}>{label}</label>
            <input
              id={`${id}-${rest}`}
              type="password"
              autoComplete="new-password"
              maxLength={4096}
              value={secrets[rest] ?? ''}
              aria-describedby={`${id}-${rest}-state`}
              onChange={(e) => setSecrets((s) => ({ ...s, [rest]: e.target.value }))}
            />
            <span id={`${id}-${rest}-state`} className="muted small">
              {isSet ? 'set' : 'not set'}
              {isSet ? ' — leave empty to keep it' : ' — leave empty to leave it unset'}
            </span>
          </span>
        );
      })}
      <ErrorMessage error={error} title={`The ${name} environment could not be saved`} />
      <p role="status" className="notice">
        {notice}
      </p>
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          Save {name}
        </button>
      </div>
    </form>
  );
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
