import { useCallback, useId, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import { gql, useMutation, useQuery } from 'urql';
import { useLiveConnected } from '../client';
import { ConfirmDialog } from '../components/Confirm';
import {
  Empty,
  ErrorMessage,
  Loading,
  StatusBadge,
  Time,
  formatBytes,
  stepWords,
  useInterval,
  useTitle,
  TableWrap,
} from '../components/common';
import { TERMINAL_OPERATION, type ActivityPage, type SiteFields } from '../graphql';
import { useOperationFeed, useRuntimeOptions } from './Sites';

interface Step {
  id: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  attempts: number;
  detail: string | null;
}

interface Operation {
  id: string;
  operationType: string;
  status: string;
  step: string;
  steps: Step[];
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: string;
  finishedAt: string | null;
}

interface Capture {
  status: string;
  sizeBytes: number | null;
}

interface RecoveryPoint {
  id: string;
  kind: string;
  reason: string | null;
  status: string;
  runtimeVersion: string;
  errorCode: string | null;
  createdAt: string;
  completedAt: string | null;
  database: Capture;
  content: Capture;
}

const OPERATION = `
  id
  operationType
  status
  step
  steps { id status startedAt finishedAt attempts detail }
  errorCode
  errorMessage
  createdAt
  finishedAt
`;

const SITE = gql<
  {
    project: { id: string; name: string; site: SiteFields | null };
    siteHistory: { activeOperation: Operation | null; latestOperation: Operation | null; recoveryPoints: RecoveryPoint[] };
  },
  { projectId: string }
>`
  query ConsoleSite($projectId: ID!) {
    project(id: $projectId) {
      id
      name
      site { projectId name status runtimeVersion siteUrl adminUrl domain deploymentMode createdAt }
    }
    siteHistory(projectId: $projectId) {
      activeOperation { ${OPERATION} }
      latestOperation { ${OPERATION} }
      recoveryPoints {
        id kind reason status runtimeVersion errorCode createdAt completedAt
        database { status sizeBytes }
        content { status sizeBytes }
      }
    }
  }
`;

interface DnsRecord {
  type: string;
  name: string;
  value: string;
}

const METADATA = gql<
  {
    siteMetadata: {
      database: { id: string | null; engine: string; status: string };
      domain: { name: string; status: string; dnsRecord: DnsRecord; verificationRecord: DnsRecord | null } | null;
      process: { status: string; restarts: number } | null;
    };
  },
  { projectId: string }
>`
  query ConsoleSiteMetadata($projectId: ID!) {
    siteMetadata(projectId: $projectId) {
      database {
        id
        engine
        status
      }
      domain {
        name
        status
        dnsRecord {
          type
          name
          value
        }
        verificationRecord {
          type
          name
          value
        }
      }
      process {
        status
        restarts
      }
    }
  }
`;

const HISTORY = gql<{ operationActivity: ActivityPage }, { id: string }>`
  query ConsoleSiteOperations($id: ID!) {
    operationActivity(scope: "project", id: $id, limit: "20")
  }
`;

const SITE_ACTION = gql<{ siteAction: { id: string } }, { projectId: string; action: string }>`
  mutation ConsoleSiteAction($projectId: ID!, $action: String!) {
    siteAction(projectId: $projectId, action: $action) {
      id
      status
    }
  }
`;

const CREATE_POINT = gql<{ createRecoveryPoint: { operation: { id: string } } }, { projectId: string; reason: string | null }>`
  mutation ConsoleCreateRecoveryPoint($projectId: ID!, $reason: String) {
    createRecoveryPoint(projectId: $projectId, reason: $reason) {
      operation {
        id
        status
      }
    }
  }
`;

const RESTORE_POINT = gql<
  { restoreRecoveryPoint: { operation: { id: string } } },
  { projectId: string; recoveryPointId: string }
>`
  mutation ConsoleRestoreRecoveryPoint($projectId: ID!, $recoveryPointId: ID!) {
    restoreRecoveryPoint(projectId: $projectId, recoveryPointId: $recoveryPointId) {
      operation {
        id
        status
      }
    }
  }
`;

const STAGING = gql<{ createStagingSite: { project: { id: string } } }, { projectId: string; name: string | null }>`
  mutation ConsoleCreateStaging($projectId: ID!, $name: String) {
    createStagingSite(projectId: $projectId, name: $name) {
      project {
        id
      }
      operation {
        id
        status
      }
    }
  }
`;

const UPGRADE = gql<{ upgradeSite: { operation: { id: string } } }, { projectId: string; targetVersion: string }>`
  mutation ConsoleUpgradeSite($projectId: ID!, $targetVersion: String!) {
    upgradeSite(projectId: $projectId, targetVersion: $targetVersion) {
      operation {
        id
        status
      }
    }
  }
`;

const SET_DOMAIN = gql<{ setSiteDomain: { name: string; status: string } }, { projectId: string; domain: string }>`
  mutation ConsoleSetDomain($projectId: ID!, $domain: String!) {
    setSiteDomain(projectId: $projectId, domain: $domain) {
      name
      status
    }
  }
`;

export default function SitePage() {
  const { projectId = '' } = useParams();
  const [{ data, fetching, error }, reexecute] = useQuery({ query: SITE, variables: { projectId } });
  const [meta, reexecuteMeta] = useQuery({ query: METADATA, variables: { projectId } });
  const [ops, reexecuteOps] = useQuery({ query: HISTORY, variables: { id: projectId } });
  const refresh = useCallback(() => {
    reexecute({ requestPolicy: 'network-only' });
    reexecuteMeta({ requestPolicy: 'network-only' });
    reexecuteOps({ requestPolicy: 'network-only' });
  }, [reexecute, reexecuteMeta, reexecuteOps]);
  const live = useLiveConnected();
  const feed = useOperationFeed(projectId, refresh);

  const site = data?.project.site ?? null;
  const name = site?.name ?? data?.project.name ?? 'Site';
  useTitle(site ? `${name} · Sites` : 'Site');

  const history = data?.siteHistory;
  const active = history?.activeOperation ?? null;
  const pending = (history?.recoveryPoints ?? []).some((p) => p.status === 'pending');
  const moving =
    Boolean(active) || pending || site?.status === 'provisioning' || (feed ? !TERMINAL_OPERATION.has(feed.status) : false);
  useInterval(refresh, live ? 3000 : 1000, moving);

  if (fetching && !data) return <Loading what="the site" />;
  if (!data) {
    return (
      <>
        <h1>Site</h1>
        <ErrorMessage error={error} title="The site could not be read" />
        <p>
          <Link to="/sites">Back to the sites</Link>
        </p>
      </>
    );
  }

  return (
    <>
      <p className="crumbs">
        <Link to="/sites">Sites</Link> /
      </p>
      <div className="page-head">
        <h1>{name}</h1>
        {site ? <StatusBadge status={site.status} /> : null}
      </div>
      <ErrorMessage error={error} />
      {site ? (
        <>
          <dl className="facts">
            <dt>Address</dt>
            <dd>
              <a href={site.siteUrl} target="_blank" rel="noreferrer">
                Open site
              </a>{' '}
              <span className="muted small">{site.siteUrl}</span>
            </dd>
            <dt>Admin</dt>
            <dd>
              <a href={site.adminUrl} target="_blank" rel="noreferrer">
                Open admin
              </a>
            </dd>
            <dt>Runtime</dt>
            <dd>{site.runtimeVersion}</dd>
            <dt>Process</dt>
            <dd>
              {meta.data?.siteMetadata.process
                ? `${meta.data.siteMetadata.process.status}, ${meta.data.siteMetadata.process.restarts} restart(s)`
                : '—'}
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={site.createdAt} />
            </dd>
          </dl>
          <CurrentOperation active={active} latest={history?.latestOperation ?? null} />
          <Actions projectId={projectId} site={site} onDone={refresh} />
          <RecoveryPoints projectId={projectId} points={history?.recoveryPoints ?? []} onDone={refresh} />
          <Upgrade projectId={projectId} current={site.runtimeVersion} onDone={refresh} />
          <Domain projectId={projectId} domain={meta.data?.siteMetadata.domain ?? null} onDone={refresh} />
        </>
      ) : (
        <Empty>This project has no publishing site.</Empty>
      )}
      <OperationHistory page={ops.data?.operationActivity} error={ops.error} />
    </>
  );
}

function CurrentOperation({ active, latest }: { active: Operation | null; latest: Operation | null }) {
  const op = active ?? latest;
  if (!op) return null;
  return (
    <section aria-labelledby="op-h" className="panel">
      <h2 id="op-h">{active ? 'In progress' : 'Last operation'}</h2>
      <p>
        {stepWords(op.operationType)}: <StatusBadge status={op.status} />{' '}
        <span className="muted small">
          started <Time iso={op.createdAt} />
        </span>
      </p>
      {op.errorMessage ? (
        <p className="error-text">
          {op.errorMessage} {op.errorCode ? <code className="code">{op.errorCode}</code> : null}
        </p>
      ) : null}
      {op.steps.length > 0 ? (
        <ol className="steps">
          {op.steps.map((s) => (
            <li key={s.id} className={`step-${s.status}`}>
              <span>{stepWords(s.id)}</span> <StatusBadge status={s.status} />
              {s.attempts > 1 ? <span className="muted small"> attempt {s.attempts}</span> : null}
              {s.detail ? <div className="muted small">{s.detail}</div> : null}
            </li>
          ))}
        </ol>
      ) : null}
    </section>
  );
}

function Actions({ projectId, site, onDone }: { projectId: string; site: SiteFields; onDone: () => void }) {
  const [res, run] = useMutation(SITE_ACTION);
  const [staging, runStaging] = useMutation(STAGING);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [notice, setNotice] = useState('');
  const navigate = useNavigate();

  const act = async (action: string) => {
    setNotice('');
    const r = await run({ projectId, action });
    if (!r.error) {
      setNotice(`${stepWords(action)} requested.`);
      onDone();
    }
    return r;
  };

  return (
    <section aria-labelledby="actions-h">
      <h2 id="actions-h">Actions</h2>
      <div className="row wrap">
        <button type="button" disabled={res.fetching} onClick={() => void act('restart')}>
          Restart
        </button>
        <button type="button" disabled={res.fetching || site.status === 'stopped'} onClick={() => void act('stop')}>
          Stop
        </button>
        <button type="button" disabled={res.fetching || site.status === 'running'} onClick={() => void act('start')}>
          Start
        </button>
        {site.status === 'provision_failed' ? (
          <button type="button" disabled={res.fetching} onClick={() => void act('retry_provisioning')}>
            Retry provisioning
          </button>
        ) : null}
        <button
          type="button"
          disabled={staging.fetching}
          onClick={() => {
            setNotice('');
            void runStaging({ projectId, name: `${site.name} staging` }).then((r) => {
              if (!r.error) {
                setNotice('A staging copy is being made from a fresh recovery point. It appears in the sites list.');
                onDone();
              }
            });
          }}
        >
          Create staging copy
        </button>
        <button type="button" className="danger" onClick={() => setConfirmDelete(true)}>
          Delete site
        </button>
      </div>
      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={res.error ?? staging.error} />
      <ConfirmDialog
        open={confirmDelete}
        title={`Delete “${site.name}”?`}
        confirmLabel="Delete site"
        danger
        busy={res.fetching}
        onCancel={() => setConfirmDelete(false)}
        onConfirm={() => {
          void act('delete').then((r) => {
            setConfirmDelete(false);
            if (!r.error) navigate('/sites');
          });
        }}
      >
        <p>The site, its database and its content are removed. Recovery points are not a way back from this.</p>
      </ConfirmDialog>
    </section>
  );
}

function RecoveryPoints({ projectId, points, onDone }: { projectId: string; points: RecoveryPoint[]; onDone: () => void }) {
  const id = useId();
  const [reason, setReason] = useState('');
  const [created, create] = useMutation(CREATE_POINT);
  const [restored, restore] = useMutation(RESTORE_POINT);
  const [toRestore, setToRestore] = useState<RecoveryPoint | null>(null);
  const [notice, setNotice] = useState('');

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setNotice('');
    const r = await create({ projectId, reason: reason.trim() || null });
    if (!r.error) {
      setReason('');
      setNotice('Recovery point requested: it appears below when it is taken.');
      onDone();
    }
  };

  return (
    <section aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>Recovery points</h2>
      <form className="row wrap" onSubmit={submit}>
        <label htmlFor={`${id}-reason`}>Reason (optional)</label>
        <input id={`${id}-reason`} type="text" maxLength={200} value={reason} onChange={(e) => setReason(e.target.value)} />
        <button type="submit" className="primary" disabled={created.fetching}>
          Create recovery point
        </button>
      </form>
      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={created.error ?? restored.error} />
      {points.length === 0 ? (
        <Empty>
          No recovery points yet. Choose <strong>Create recovery point</strong> to capture the database, content and release as
          they are now.
        </Empty>
      ) : null}
      <TableWrap label="Recovery points" hidden={points.length === 0}>
        <table>
          <caption className="sr-only">Recovery points</caption>
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col" className="wide">
                Kind
              </th>
              <th scope="col" className="wide">
                Reason
              </th>
              <th scope="col">Status</th>
              <th scope="col" className="wide">
                Size
              </th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {points.map((p) => (
              <tr key={p.id}>
                <th scope="row">
                  <Time iso={p.createdAt} />
                </th>
                <td className="wide">{stepWords(p.kind)}</td>
                <td className="wide">{p.reason ?? '—'}</td>
                <td>
                  <StatusBadge status={p.status} />
                  {p.errorCode ? <code className="code"> {p.errorCode}</code> : null}
                </td>
                <td className="wide">
                  {p.database.sizeBytes != null ? formatBytes((p.database.sizeBytes ?? 0) + (p.content.sizeBytes ?? 0)) : '—'}
                </td>
                <td>
                  {p.status === 'completed' ? (
                    <button
                      type="button"
                      onClick={() => setToRestore(p)}
                      aria-label={`Restore the point of ${new Date(p.createdAt).toLocaleString()}`}
                    >
                      Restore
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <ConfirmDialog
        open={toRestore !== null}
        title="Restore this recovery point?"
        confirmLabel="Restore"
        danger
        busy={restored.fetching}
        onCancel={() => setToRestore(null)}
        onConfirm={() => {
          if (!toRestore) return;
          void restore({ projectId, recoveryPointId: toRestore.id }).then((r) => {
            setToRestore(null);
            if (!r.error) {
              setNotice('Restore started: the site is unavailable until it completes.');
              onDone();
            }
          });
        }}
      >
        <p>
          The site goes back to its database, content and release of <Time iso={toRestore?.createdAt} />. Changes made since are
          lost.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function Upgrade({ projectId, current, onDone }: { projectId: string; current: string; onDone: () => void }) {
  const id = useId();
  const { options } = useRuntimeOptions();
  const successors = (options ?? []).filter((o) => o.upgrade_predecessors.includes(current));
  const [target, setTarget] = useState('');
  const [res, run] = useMutation(UPGRADE);
  const [notice, setNotice] = useState('');
  if (!options || successors.length === 0) return null;
  const chosen = target || successors[0].version;
  return (
    <section aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>Upgrade</h2>
      <form
        className="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setNotice('');
          void run({ projectId, targetVersion: chosen }).then((r) => {
            if (!r.error) {
              setNotice('Upgrade started: a recovery point is taken first, and a failed upgrade rolls back to it.');
              onDone();
            }
          });
        }}
      >
        <label htmlFor={`${id}-v`}>Target version</label>
        <select id={`${id}-v`} value={chosen} onChange={(e) => setTarget(e.target.value)}>
          {successors.map((o) => (
            <option key={o.version} value={o.version}>
              {o.label} ({o.version})
            </option>
          ))}
        </select>
        <button type="submit" disabled={res.fetching}>
          Upgrade
        </button>
      </form>
      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={res.error} />
    </section>
  );
}

function Domain({
  projectId,
  domain,
  onDone,
}: {
  projectId: string;
  domain: { name: string; status: string; dnsRecord: DnsRecord; verificationRecord: DnsRecord | null } | null;
  onDone: () => void;
}) {
  const id = useId();
  const [value, setValue] = useState('');
  const [res, run] = useMutation(SET_DOMAIN);
  return (
    <section aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>Custom domain</h2>
      {domain ? (
        <div className="panel">
          <p>
            <strong>{domain.name}</strong> <StatusBadge status={domain.status} />
          </p>
          {domain.verificationRecord && domain.status !== 'active' ? (
            <>
              <p>Publish this TXT record, then choose Check domain:</p>
              <DnsTable records={[domain.verificationRecord]} label="Verification record" />
            </>
          ) : null}
          <p>Point the domain at the site with:</p>
          <DnsTable records={[domain.dnsRecord]} label="Routing record" />
        </div>
      ) : (
        <p className="muted">No custom domain. Enter one to get the DNS records to publish.</p>
      )}
      <form
        className="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          const d = value.trim() || domain?.name || '';
          void run({ projectId, domain: d }).then((r) => {
            if (!r.error) onDone();
          });
        }}
      >
        <label htmlFor={`${id}-d`}>Domain</label>
        <input
          id={`${id}-d`}
          type="text"
          placeholder={domain?.name ?? 'blog.example.com'}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          required={!domain}
        />
        <button type="submit" disabled={res.fetching}>
          {domain && !value ? 'Check domain' : 'Attach domain'}
        </button>
      </form>
      <ErrorMessage error={res.error} />
    </section>
  );
}

function DnsTable({ records, label }: { records: DnsRecord[]; label: string }) {
  return (
    <TableWrap label={label}>
      <table>
        <caption className="sr-only">{label}</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {records.map((r) => (
            <tr key={`${r.type}${r.name}${r.value}`}>
              <td>{r.type}</td>
              <td>
                <code>{r.name}</code>
              </td>
              <td>
                <code className="break">{r.value}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

function OperationHistory({ page, error }: { page: ActivityPage | undefined; error: unknown }) {
  const items = page?.history?.items ?? [];
  return (
    <section aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      <ErrorMessage error={error} title="The history could not be read" />
      {page && items.length === 0 ? <Empty>No operations recorded for this site yet.</Empty> : null}
      {items.length > 0 ? (
        <TableWrap label="Operation history">
          <table>
            <caption className="sr-only">Operation history</caption>
            <thead>
              <tr>
                <th scope="col">Operation</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
                <th scope="col" className="wide">
                  Finished
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((i) => (
                <tr key={i.id}>
                  <th scope="row">{i.title ?? stepWords(i.type)}</th>
                  <td>
                    <StatusBadge status={i.status} />
                    {i.current_step ? <span className="step"> {stepWords(i.current_step)}</span> : null}
                    {i.terminal?.error_code ? <code className="code"> {i.terminal.error_code}</code> : null}
                  </td>
                  <td>
                    <Time iso={i.created_at} />
                  </td>
                  <td className="wide">
                    <Time iso={(i as { finished_at?: string | null }).finished_at} />
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
