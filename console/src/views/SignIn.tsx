// Sign in with a user of the auth service, or through one of auth's OpenID providers (a link
// to the gateway's start route; the outcome comes back in /signin's fragment, read by App).
import { useEffect, useState, type FormEvent } from "react";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { AuthService } from "../gen/services/auth/auth_pb";
import type { OIDCService, Provider } from "../gen/plinth/auth/v1/oidc_pb";
import { startPath } from "../lib/oidc";
import { timestampMs } from "../lib/format";
import { describeError } from "../lib/errors";
import { validateLogin } from "../lib/auth";
import type { Session } from "../lib/session";
import { fetchRole, type Role } from "../lib/roles";
import { ErrorLine } from "./ui";

export function SignIn({ auth, oidc, message, onSignedIn }: {
  auth: Client<typeof AuthService>;
  oidc: Client<typeof OIDCService>;
  message: string;
  onSignedIn: (s: Session) => void;
}) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const [providers, setProviders] = useState<Provider[]>([]);
  // Until auth says otherwise the form shows: it is how every suite without providers signs in.
  const [passwordLogin, setPasswordLogin] = useState(true);
  const [providersProblem, setProvidersProblem] = useState("");

  useEffect(() => {
    let live = true;
    oidc.listProviders({}).then(
      (r) => {
        if (!live) return;
        setProviders(r.providers);
        setPasswordLogin(r.passwordLogin);
      },
      (err: unknown) => {
        // An auth (or gateway) without OpenID sign-in has no providers to offer: nothing to say.
        if (live && !(err instanceof ConnectError && err.code === Code.Unimplemented)) {
          setProvidersProblem(`Sign-in with other providers is not offered now: ${describeError(err)}`);
        }
      },
    );
    return () => {
      live = false;
    };
  }, [oidc]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const problem = validateLogin(username, password);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    setError("");
    try {
      const r = await auth.login({ username, password });
      // The role decides which actions the pages offer; not knowing it offers them all (the
      // services still refuse what the role may not do).
      const role = await fetchRole(auth, r.token).catch((): Role => "");
      onSignedIn({ token: r.token, expiresAt: timestampMs(r.expires?.timestamp), accountId: r.accountId, username, role });
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin" id="main">
      <div className="signin-box">
        <h1 id="signin-h">Plinth</h1>
        {message && <p className="notice" role="status">{message}</p>}
        {providers.length > 0 && (
          <nav className="providers" aria-label="Sign in with a provider">
            {providers.map((p) => (
              <a key={p.name} className="button" href={startPath(p.name)}>Sign in with {p.label || p.name}</a>
            ))}
          </nav>
        )}
        {providersProblem && <p className="muted">{providersProblem}</p>}
        {!passwordLogin && <p className="muted">Password sign-in is turned off here: sign in with a provider.</p>}
        {passwordLogin && (
        <form onSubmit={submit} aria-labelledby="signin-h" noValidate>
          <p className="muted">{providers.length > 0 ? "Or sign in with your Plinth account." : "Sign in with your Plinth account."}</p>
          <label>
            Username
            <input name="username" autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} autoFocus required />
          </label>
          <label>
            Password
            <input name="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
          </label>
          <ErrorLine text={error} />
          <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
        </form>
        )}
      </div>
    </main>
  );
}
