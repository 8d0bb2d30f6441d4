// Sign in with an API token (a server started with --auth). The token goes to POST
// api/v1/session once and comes back as an HttpOnly cookie: scripts never hold it.
import { useState } from "preact/hooks";
import { ApiError, send } from "../api";

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await send("POST", "session", { token: token.trim() });
      setToken("");
      onSignedIn();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="page narrow signin">
      <h1>Sign in</h1>
      <p class="muted">This flightlog server needs a token. An admin makes one with
        <code> flightlog token create --role reader</code>.</p>
      <form onSubmit={submit} class="signin-form">
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autoComplete="current-password" placeholder="flt_…" value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)} required autoFocus />
        <button class="btn btn-primary" type="submit" disabled={busy || !token.trim()}>Sign in</button>
        {error ? <p class="form-error" role="alert">{error}</p> : null}
      </form>
      <p class="muted small">The token is kept in an HttpOnly session cookie for this server only.</p>
    </div>
  );
}
