import { Suspense, useEffect, useRef, useState } from 'react';
import { NavLink, Outlet, useLocation } from 'react-router-dom';
import { useSession } from '../session';
import { ErrorMessage } from './common';

const PAGES = [
  ['/sites', 'Sites'],
  ['/commerce', 'Commerce'],
  ['/assets', 'Assets'],
  ['/activity', 'Activity'],
  ['/mail', 'Mail'],
  ['/billing', 'Billing'],
] as const;

export function Layout() {
  const { session, signOut } = useSession();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const main = useRef<HTMLElement>(null);
  const { pathname } = useLocation();
  const first = useRef(true);

  // After a navigation, keyboard and screen-reader users start at the new page's content.
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus();
  }, [pathname]);

  const account = session.state === 'signed-in' ? session.data : null;
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Hosting console</span>
        <nav aria-label="Console">
          <ul>
            {PAGES.map(([to, label]) => (
              <li key={to}>
                <NavLink to={to}>{label}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          {account ? (
            <span className="muted" title={`key ${account.key_id}`}>
              {account.role}
            </span>
          ) : null}
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              setBusy(true);
              setError(null);
              signOut().catch((e: unknown) => {
                setError(e);
                setBusy(false);
              });
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <ErrorMessage error={error} title="Signing out failed" />
      <main id="main" ref={main} tabIndex={-1}>
        <Suspense
          fallback={
            <p className="muted" role="status">
              Loading…
            </p>
          }
        >
          <Outlet />
        </Suspense>
      </main>
    </>
  );
}
