import { StrictMode, lazy } from 'react';
import { createRoot } from 'react-dom/client';
import { Navigate, RouterProvider, createBrowserRouter, isRouteErrorResponse, useRouteError } from 'react-router-dom';
import { Provider as UrqlProvider } from 'urql';
import { Layout } from './components/Layout';
import { ErrorMessage, Loading, useTitle } from './components/common';
import { SitesPage } from './pages/Sites';
import { SignIn } from './pages/SignIn';
import { SessionProvider, useSession } from './session';
import './styles.css';

// The first page (sites) is in the entry chunk; every other page loads when first opened.
const SitePage = lazy(() => import('./pages/Site'));
const CommercePage = lazy(() => import('./pages/Commerce'));
const AssetsPage = lazy(() => import('./pages/Assets'));
const ActivityPage = lazy(() => import('./pages/Activity'));
const MailPage = lazy(() => import('./pages/Mail'));
const BillingPage = lazy(() => import('./pages/Billing'));

/** The session gate: without a session every address shows the sign-in page. */
function Root() {
  const { session } = useSession();
  if (session.state === 'loading') {
    return (
      <main id="main">
        <Loading what="the console" />
      </main>
    );
  }
  if (session.state === 'signed-out') return <SignIn notice={session.reason} />;
  return (
    <UrqlProvider value={session.client}>
      <Layout />
    </UrqlProvider>
  );
}

function NotFound() {
  useTitle('Not found');
  return (
    <>
      <h1>Not found</h1>
      <p>
        This address is not a page of the console. Choose a page in the navigation above, or go to the{' '}
        <a href="/console/sites">sites</a>.
      </p>
    </>
  );
}

function RouteError() {
  const error = useRouteError();
  useTitle('Error');
  return (
    <main id="main">
      <h1>Something went wrong</h1>
      {isRouteErrorResponse(error) ? (
        <p role="alert">
          {error.status} {error.statusText}
        </p>
      ) : (
        <ErrorMessage error={error} />
      )}
      <p>
        <a href="/console/sites">Back to the sites</a>
      </p>
    </main>
  );
}

const router = createBrowserRouter(
  [
    {
      path: '/',
      element: <Root />,
      errorElement: <RouteError />,
      children: [
        { index: true, element: <Navigate to="/sites" replace /> },
        { path: 'sites', element: <SitesPage /> },
        { path: 'sites/:projectId', element: <SitePage /> },
        { path: 'commerce', element: <CommercePage /> },
        { path: 'assets', element: <AssetsPage /> },
        { path: 'activity', element: <ActivityPage /> },
        { path: 'mail', element: <MailPage /> },
        { path: 'billing', element: <BillingPage /> },
        { path: '*', element: <NotFound /> },
      ],
    },
  ],
  { basename: '/console' },
);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <SessionProvider>
      <RouterProvider router={router} />
    </SessionProvider>
  </StrictMode>,
);
