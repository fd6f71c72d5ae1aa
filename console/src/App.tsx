// The console shell: sign-in gate, menu, the current page, and the end of a session (sign-out,
// expiry, or a token a service refuses) back to the sign-in page with a message.
import { useCallback, useEffect, useMemo, useState } from "react";
import { makeClients } from "./lib/clients";
import { describeError } from "./lib/errors";
import { afterSignIn, notFound, pageFor, pages, signInPath } from "./lib/routes";
import { canAdminister, canWrite } from "./lib/roles";
import { endSession, loadSession, msUntilExpiry, refusedMessage, saveSession, signOutReason, vagrantToken, type Session } from "./lib/session";
import { SignIn } from "./views/SignIn";
import { Storage } from "./views/Storage";
import { VagrantView } from "./views/Vagrant";
import { Clusters } from "./views/Clusters";
import { Volumes } from "./views/Volumes";
import { Admin } from "./views/Admin";
import { Backups } from "./views/Backups";
import { Activity } from "./views/Activity";

function usePath(): [string, (p: string) => void] {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const onPop = () => setPath(window.location.pathname);
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  const go = useCallback((p: string) => {
    if (p !== window.location.pathname) window.history.pushState(null, "", p);
    setPath(p);
    // A new page: move focus to it, so keyboard and screen-reader users start there.
    requestAnimationFrame(() => document.getElementById("main")?.focus());
  }, []);
  return [path, go];
}

export function App() {
  const store = window.sessionStorage;
  const [session, setSession] = useState<Session | null>(() => loadSession(store, Date.now()));
  const [vToken, setVToken] = useState(() => vagrantToken(store));
  const [path, go] = usePath();
  const [reason, setReason] = useState(() => signOutReason(store));

  const end = useCallback((why: string) => {
    endSession(store, why);
    setReason(why);
    setSession(null);
    setVToken("");
  }, [store]);

  // Expiry sends the user back to sign-in at the moment auth stops accepting the token.
  useEffect(() => {
    if (!session) return;
    const ms = msUntilExpiry(session, Date.now());
    if (ms === null) return;
    const t = setTimeout(() => end("Your session expired. Sign in again."), Math.min(ms, 2 ** 31 - 1));
    return () => clearTimeout(t);
  }, [session, end]);

  const clients = useMemo(
    () => makeClients(session?.token ?? "", vToken, (msg) => end(refusedMessage(msg))),
    [session, vToken, end],
  );

  const current = pageFor(path, session !== null);
  useEffect(() => {
    // A path that names no page keeps its URL (the user sees what they asked for).
    if (current !== path && current !== notFound) window.history.replaceState(null, "", current);
  }, [current, path]);
  useEffect(() => {
    const p = pages.find((pg) => pg.path === current);
    document.title = p ? `${p.title} · Plinth` : current === notFound ? "Page not found · Plinth" : "Sign in · Plinth";
  }, [current]);

  if (!session || current === signInPath) {
    return (
      <SignIn
        auth={clients.auth}
        message={reason}
        onSignedIn={(s) => {
          saveSession(store, s);
          setReason("");
          setSession(s);
          // Back to the page the user asked for before signing in (a bookmark, a reload).
          go(afterSignIn(path));
        }}
      />
    );
  }

  const signOut = async () => {
    let why = "You signed out.";
    try {
      await clients.auth.logout({});
    } catch (err) {
      why = `You signed out here, but auth did not confirm the token was revoked: ${describeError(err)}`;
    }
    end(why);
  };

  return (
    <div className="shell">
      <header className="top">
        <a className="brand" href="/storage" onClick={(e) => { e.preventDefault(); go("/storage"); }}>Plinth</a>
        <nav aria-label="Main">
          <ul>
            {pages.filter((p) => p.path !== "/admin" || canAdminister(session.role)).map((p) => (
              <li key={p.path}>
                <a
                  href={p.path}
                  aria-current={p.path === current ? "page" : undefined}
                  onClick={(e) => { e.preventDefault(); go(p.path); }}
                >{p.title}</a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span title={session.accountId}>{session.username}</span>
          {session.role && <span className="badge" data-role={session.role}>{session.role}</span>}
          <button type="button" onClick={signOut}>Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {current === "/storage" && <Storage stats={clients.stats} history={clients.history} cluster={clients.cluster} />}
        {current === "/vagrant" && <VagrantView client={clients.vagrant} runners={clients.runners} onToken={setVToken} />}
        {current === "/clusters" && <Clusters kaas={clients.kaas} canWrite={canWrite(session.role)} />}
        {current === "/volumes" && <Volumes lv={clients.lv} vg={clients.vg} jobs={clients.lvmdJobs} canWrite={canWrite(session.role)} />}
        {current === "/admin" && <Admin admin={clients.admin} me={session.username} />}
        {current === "/backups" && <Backups catalog={clients.catalog} />}
        {current === "/activity" && <Activity history={clients.history} />}
        {current === notFound && (
          <>
            <div className="page-head"><h1>Page not found</h1></div>
            <p role="status">
              The console has no page at <code>{path}</code>.{" "}
              <a href="/storage" onClick={(e) => { e.preventDefault(); go("/storage"); }}>Go to Storage</a>, or pick a page from the menu.
            </p>
          </>
        )}
      </main>
    </div>
  );
}
