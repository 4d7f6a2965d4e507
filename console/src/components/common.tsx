import { useEffect, useRef, useState, type ReactNode } from 'react';
import { CombinedError } from 'urql';
import { ApiError } from '../api';

/** The document title names the page (contract: every signed-in page). */
export function useTitle(page: string): void {
  useEffect(() => {
    document.title = `${page} · Hosting console`;
  }, [page]);
}

interface Shown {
  message: string;
  code: string | null;
}

/** The API's message and code, whichever way it failed. */
export function describeError(error: unknown): Shown {
  if (error instanceof ApiError) return { message: error.message, code: error.code };
  if (error instanceof CombinedError) {
    const g = error.graphQLErrors[0];
    if (g) {
      const ext = g.extensions as { code?: unknown; error?: { code?: unknown } } | undefined;
      const code = typeof ext?.code === 'string' ? ext.code : typeof ext?.error?.code === 'string' ? ext.error.code : null;
      return { message: g.message, code };
    }
    const status = (error.response as Response | undefined)?.status;
    return {
      message: error.networkError?.message || 'The console could not reach the platform.',
      code: status ? `http_${status}` : 'network_error',
    };
  }
  if (error instanceof Error) return { message: error.message, code: null };
  return { message: String(error), code: null };
}

/** An error as an alert: the API's message, then its code. */
export function ErrorMessage({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const { message, code } = describeError(error);
  return (
    <div role="alert" className="error">
      {title ? <strong>{title}: </strong> : null}
      {message}
      {code ? (
        <>
          {' '}
          <code className="code">{code}</code>
        </>
      ) : null}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

const WORDS: Record<string, string> = {
  provisioning: 'Provisioning',
  running: 'Running',
  stopped: 'Stopped',
  provision_failed: 'Provisioning failed',
  pending: 'Pending',
  queued: 'Queued',
  completed: 'Completed',
  succeeded: 'Succeeded',
  failed: 'Failed',
  incomplete: 'Incomplete',
  captured: 'Captured',
  skipped: 'Skipped',
  healthy: 'Healthy',
  degraded: 'Degraded',
  cancelled: 'Cancelled',
  ready: 'Ready',
  invalid: 'Invalid',
  disabled: 'Disabled',
  processing: 'Processing',
  deleting: 'Deleting',
  quarantined: 'Quarantined',
  waiting: 'Waiting',
  pending_approval: 'Waiting for approval',
  approved: 'Approved',
  denied: 'Denied',
  expired: 'Expired',
  active: 'Active',
  pending_verification: 'Waiting for DNS verification',
};

/** A status in words: `provision_failed` → "Provisioning failed". */
export function statusWords(status: string | null | undefined): string {
  if (!status) return 'Unknown';
  return WORDS[status] ?? status.charAt(0).toUpperCase() + status.slice(1).replace(/_/g, ' ');
}

/** A step id in words: `pull_image` → "pull image". */
export function stepWords(step: string | null | undefined): string {
  return (step ?? '').replace(/[_-]+/g, ' ').trim();
}

const TONE: Record<string, string> = {
  running: 'ok',
  completed: 'ok',
  succeeded: 'ok',
  healthy: 'ok',
  ready: 'ok',
  active: 'ok',
  approved: 'ok',
  captured: 'ok',
  failed: 'bad',
  provision_failed: 'bad',
  incomplete: 'bad',
  invalid: 'bad',
  quarantined: 'bad',
  denied: 'bad',
  degraded: 'warn',
  stopped: 'idle',
  cancelled: 'idle',
  expired: 'idle',
  disabled: 'idle',
};

/** A status in words as a badge; spaces around it keep it a word of its own in the row's text. */
export function StatusBadge({ status }: { status: string | null | undefined }) {
  return (
    <>
      {' '}
      <span className={`badge ${TONE[status ?? ''] ?? 'busy'}`}>{statusWords(status)}</span>{' '}
    </>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <>—</>;
  return <time dateTime={iso}>{formatTime(iso)}</time>;
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** Re-run `tick` every `ms` while `active` (the fallback of the live views and of slow work). */
export function useInterval(tick: () => void, ms: number, active: boolean): void {
  useEffect(() => {
    if (!active) return;
    const t = setInterval(tick, ms);
    return () => clearInterval(t);
  }, [tick, ms, active]);
}

/**
 * A table's box: when the table is wider than the screen it scrolls sideways, and then it is a named,
 * focusable region so the keyboard can scroll it too.
 */
export function TableWrap({ label, hidden, children }: { label: string; hidden?: boolean; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const check = () => setScrolls(el.scrollWidth > el.clientWidth + 1);
    const ro = new ResizeObserver(check);
    ro.observe(el);
    if (el.firstElementChild) ro.observe(el.firstElementChild);
    check();
    return () => ro.disconnect();
  }, []);
  const region = scrolls ? { tabIndex: 0, role: 'region', 'aria-label': `${label} (scrolls sideways)` } : {};
  return (
    <div ref={ref} className="table-wrap" hidden={hidden} {...region}>
      {children}
    </div>
  );
}
