import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'react-router-dom';
import { useQuery, useSubscription } from 'urql';
import { api, idempotencyKey } from '../api';
import { useLiveConnected } from '../client';
import {
  Empty,
  ErrorMessage,
  Loading,
  StatusBadge,
  Time,
  stepWords,
  useInterval,
  useTitle,
  TableWrap,
} from '../components/common';
import {
  OPERATION_UPDATED,
  PROJECTS,
  TERMINAL_OPERATION,
  type OperationUpdate,
  type RuntimeOption,
  type SiteFields,
} from '../graphql';

interface CreatedSite {
  project: { id: string };
  site_url: string;
  admin_url: string;
  operation: { id: string; status: string; step: string; operation_type: string };
}

/** Statuses a site leaves by itself: the list follows them live (and polls as a fallback). */
const TRANSITIONAL = new Set(['provisioning']);

export function SitesPage() {
  useTitle('Sites');
  const [{ data, fetching, error }, reexecute] = useQuery({ query: PROJECTS });
  const refresh = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  const live = useLiveConnected();
  const [formOpen, setFormOpen] = useState(false);
  const [notice, setNotice] = useState('');
  const newSiteButton = useRef<HTMLButtonElement>(null);

  const sites: SiteFields[] = (data?.projects ?? []).flatMap((p) => (p.site ? [p.site] : []));
  const moving = sites.some((s) => TRANSITIONAL.has(s.status));
  // The live feed moves each row; while a site is on its way, the list is also read again
  // (every second without the feed's socket, every three with it).
  useInterval(refresh, live ? 3000 : 1000, moving);
  // Sites made elsewhere (the API, the CLI, a staging copy) show up too: a slower read while idle,
  // and at once when the page is chosen again in the navigation.
  useInterval(refresh, 10_000, !moving);
  const { key: visit } = useLocation();
  const firstVisit = useRef(visit);
  useEffect(() => {
    if (visit !== firstVisit.current) refresh();
  }, [visit, refresh]);

  const created = (name: string) => {
    setFormOpen(false);
    setNotice(`Creating “${name}”: provisioning has started. Its status below follows each step.`);
    refresh();
    newSiteButton.current?.focus();
  };

  return (
    <>
      <div className="page-head">
        <h1>Sites</h1>
        <button
          ref={newSiteButton}
          type="button"
          className="primary"
          aria-expanded={formOpen}
          aria-controls="new-site"
          onClick={() => setFormOpen((o) => !o)}
        >
          New site
        </button>
      </div>
      {formOpen ? (
        <NewSiteForm
          onCreated={created}
          onCancel={() => {
            setFormOpen(false);
            newSiteButton.current?.focus();
          }}
        />
      ) : null}
      <p role="status" className="notice">
        {notice}
      </p>
      <ErrorMessage error={error} title="The sites could not be read" />
      {fetching && !data ? <Loading what="sites" /> : null}
      {data && sites.length === 0 ? (
        <Empty>
          No sites yet. Choose <strong>New site</strong>, give it a name and pick a runtime version: the console shows each
          provisioning step as it happens.
        </Empty>
      ) : null}
      {sites.length > 0 ? (
        <TableWrap label="Sites">
          <table>
            <caption className="sr-only">Sites</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col" className="wide">
                  Runtime
                </th>
                <th scope="col">Address</th>
                <th scope="col" className="wide">
                  Created
                </th>
              </tr>
            </thead>
            <tbody>
              {sites.map((s) => (
                <SiteRow key={s.projectId} site={s} onSettled={refresh} />
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </>
  );
}

/** The last operation update of a project, from the graphql-ws feed. */
export function useOperationFeed(projectId: string, onSettled: () => void): OperationUpdate | null {
  const [res] = useSubscription(
    { query: OPERATION_UPDATED, variables: { projectId } },
    (_prev: OperationUpdate | undefined, d) => d.operationUpdated,
  );
  const op = res.data ?? null;
  const settledRef = useRef(onSettled);
  useEffect(() => {
    settledRef.current = onSettled;
  });
  const key = op ? `${op.id}:${op.status}:${op.step}` : '';
  useEffect(() => {
    // Every update may change what the page shows (a point completing, a status): read again.
    if (key) settledRef.current();
  }, [key]);
  return op;
}

function SiteRow({ site, onSettled }: { site: SiteFields; onSettled: () => void }) {
  const op = useOperationFeed(site.projectId, onSettled);
  const working = op && !TERMINAL_OPERATION.has(op.status);
  return (
    <tr>
      <th scope="row">
        <Link to={`/sites/${site.projectId}`}>{site.name}</Link>
      </th>
      <td>
        <StatusBadge status={site.status} />
        {working ? (
          <span className="step">
            {' '}
            {stepWords(op.operationType)}: {stepWords(op.step)}
          </span>
        ) : op && op.status === 'failed' ? (
          <span className="step">
            {' '}
            {stepWords(op.operationType)} failed{op.errorCode ? ` (${op.errorCode})` : ''}
          </span>
        ) : null}
      </td>
      <td className="wide">{site.runtimeVersion}</td>
      <td>
        <a href={site.siteUrl} target="_blank" rel="noreferrer">
          Open site
        </a>
      </td>
      <td className="wide">
        <Time iso={site.createdAt} />
      </td>
    </tr>
  );
}

export function useRuntimeOptions() {
  const [options, setOptions] = useState<RuntimeOption[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const ctl = new AbortController();
    api<RuntimeOption[]>('/api/v1/publisher/runtime-options', { signal: ctl.signal }).then(setOptions, (e: unknown) => {
      if ((e as Error).name !== 'AbortError') setError(e);
    });
    return () => ctl.abort();
  }, []);
  return { options, error };
}

function NewSiteForm({ onCreated, onCancel }: { onCreated: (name: string) => void; onCancel: () => void }) {
  const id = useId();
  const { options, error: catalogError } = useRuntimeOptions();
  const [name, setName] = useState('');
  const [version, setVersion] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // One key per attempt of this form: a retried click cannot create two sites.
  const [key, setKey] = useState(idempotencyKey);

  useEffect(() => {
    if (options && !version) setVersion((options.find((o) => o.is_default) ?? options[0])?.version ?? '');
  }, [options, version]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body: Record<string, string> = { name: name.trim() };
      if (version) body.runtime_version = version;
      await api<CreatedSite>('/api/v1/publisher/sites', {
        method: 'POST',
        body,
        headers: { 'idempotency-key': key },
      });
      setKey(idempotencyKey());
      onCreated(body.name);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <form id="new-site" className="panel stack" onSubmit={submit} aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`}>New site</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      <input
        id={`${id}-name`}
        type="text"
        required
        maxLength={100}
        autoFocus
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      <label htmlFor={`${id}-version`}>Runtime version</label>
      <select id={`${id}-version`} value={version} onChange={(e) => setVersion(e.target.value)} disabled={!options}>
        {!options ? <option value="">{catalogError ? 'The platform’s default' : 'Loading the catalog…'}</option> : null}
        {(options ?? []).map((o) => (
          <option key={o.version} value={o.version}>
            {o.label} ({o.version}){o.is_default ? ' — default' : ''}
          </option>
        ))}
      </select>
      <ErrorMessage error={catalogError} title="The runtime catalog could not be read" />
      <ErrorMessage error={error} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          Create site
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
