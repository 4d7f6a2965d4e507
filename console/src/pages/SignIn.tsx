import { useState, type FormEvent } from 'react';
import { useSession } from '../session';
import { ErrorMessage, useTitle } from '../components/common';

export function SignIn({ notice }: { notice?: string }) {
  const { signIn } = useSession();
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  useTitle('Sign in');

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key.trim());
      setKey('');
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <main id="main" className="signin">
      <h1>Sign in to the hosting console</h1>
      {notice ? <p role="status">{notice}</p> : null}
      <form onSubmit={submit} className="stack">
        <p className="muted">
          Paste an API key of your account. The console exchanges it for a session cookie; the key is not stored in this browser.
        </p>
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="api_key"
          type="text"
          autoComplete="off"
          spellCheck={false}
          autoCapitalize="off"
          required
          autoFocus
          value={key}
          onChange={(e) => setKey(e.target.value)}
        />
        <ErrorMessage error={error} />
        <div>
          <button type="submit" className="primary" disabled={busy}>
            Sign in
          </button>
        </div>
      </form>
      <p className="muted small">
        No key yet? An operator creates one with <code>npx platform keys create --account NAME --json</code>.
      </p>
    </main>
  );
}
