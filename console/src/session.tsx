import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { ApiError, session as sessionApi, setUnauthorizedListener, type SessionData } from './api';
import { createConsoleClient, type ConsoleClient } from './client';

export type SessionState =
  | { state: 'loading' }
  | { state: 'signed-out'; reason?: string }
  | { state: 'signed-in'; data: SessionData; client: ConsoleClient['client'] };

interface SessionApi {
  session: SessionState;
  /** Exchanges the key for the session cookie; the key itself is kept nowhere. */
  signIn: (apiKey: string) => Promise<void>;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<SessionApi | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ state: 'loading' });
  const current = useRef<ConsoleClient | null>(null);

  const begin = useCallback((data: SessionData) => {
    current.current?.dispose();
    const c = createConsoleClient();
    current.current = c;
    setState({ state: 'signed-in', data, client: c.client });
  }, []);

  const end = useCallback((reason?: string) => {
    current.current?.dispose();
    current.current = null;
    setState({ state: 'signed-out', reason });
  }, []);

  useEffect(() => {
    let live = true;
    sessionApi.read().then(
      (data) => live && begin(data),
      () => live && end(),
    );
    setUnauthorizedListener(() => {
      if (current.current) end('Your session has ended. Sign in again.');
    });
    return () => {
      live = false;
    };
  }, [begin, end]);

  const signIn = useCallback(
    async (apiKey: string) => {
      const data = await sessionApi.create(apiKey);
      begin(data);
    },
    [begin],
  );

  const signOut = useCallback(async () => {
    try {
      await sessionApi.end();
    } catch (e) {
      // Already ended on the server: the sign-in page is right either way.
      if (!(e instanceof ApiError) || e.status !== 401) throw e;
    }
    end();
  }, [end]);

  const value = useMemo(() => ({ session: state, signIn, signOut }), [state, signIn, signOut]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionApi {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside SessionProvider');
  return s;
}
