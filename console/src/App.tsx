// The console shell: sign-in gate, menu, the current page, and the end of a session (sign-out,
// expiry, or a token a service refuses) back to the sign-in page with a message. One session
// for every tab (lib/tabs.ts), and the Vagrant token vagrant-server issues to it.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { makeClients } from "./lib/clients";
import { describeError } from "./lib/errors";
import { timestampMs } from "./lib/format";
import { afterSignIn, notFound, pages, routeFor, routePath, signInPath } from "./lib/routes";
import { canAdminister, canWrite } from "./lib/roles";
import { endSession, loadSession, msUntilExpiry, refusedMessage, saveSession, signOutReason, type Session } from "./lib/session";
import { parseSignInFragment, type SignInOutcome } from "./lib/oidc";
import { askOtherTabs, channelName, onTabMessage, parseTabMessage, type Channel } from "./lib/tabs";
import { renewDelay, type VagrantSession } from "./lib/vagrantSession";
import { SignIn } from "./views/SignIn";
import { Link } from "./views/ui";
import { Storage } from "./views/Storage";
import { Overview } from "./views/Overview";
import { VagrantView } from "./views/Vagrant";
import { Clusters } from "./views/Clusters";
import { VagrantJob } from "./views/VagrantJob";
import { Volumes } from "./views/Volumes";
import { VolumePage } from "./views/VolumePage";
import { Admin } from "./views/Admin";
import { Backups, BackupServer } from "./views/Backups";
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

/** The tabs' channel, where the browser has one (every browser the console supports does). */
function tabChannel(): Channel | null {
  return typeof BroadcastChannel === "undefined" ? null : (new BroadcastChannel(channelName) as unknown as Channel);
}

/**
 * Takes the outcome of an OpenID sign-in from /signin's fragment, where the gateway's callback
 * put it: a session is kept in the session storage before anything reads it, and the fragment
 * leaves the address bar (and the history) at once, so the token is not left in view, in a
 * bookmark or in a screenshot.
 */
function takeSignInFragment(store: Storage): SignInOutcome {
  if (window.location.pathname !== signInPath || window.location.hash === "") return null;
  const outcome = parseSignInFragment(window.location.hash);
  if (outcome === null) return null;
  window.history.replaceState(null, "", window.location.pathname + window.location.search);
  if (outcome.kind === "session") saveSession(store, outcome.session);
  return outcome;
}

/** A Vagrant token refused again this soon after the last one was issued is not renewed. */
const vagrantRetryMs = 5_000;

export function App() {
  const store = window.sessionStorage;
  // Before the session is read: a sign-in just back from a provider wins over the one stored.
  const [arrival] = useState(() => takeSignInFragment(store));
  const [session, setSession] = useState<Session | null>(() => loadSession(store, Date.now()));
  const channel = useMemo(tabChannel, []);
  // A tab opened without a session asks the open ones first (a moment; they answer at once).
  const [asking, setAsking] = useState(() => session === null && channel !== null);
  const [vagrant, setVagrant] = useState<VagrantSession | null>(null);
  const [vagrantProblem, setVagrantProblem] = useState("");
  const [path, go] = usePath();
  const [reason, setReason] = useState(() => (arrival?.kind === "refused" ? arrival.message : signOutReason(store)));
  // The folded menu of a narrow screen: open or not.
  const [menuOpen, setMenuOpen] = useState(false);
  const mine = useRef(session);
  mine.current = session;

  // Ends this tab's session; tell says whether the other tabs should end it too (they already
  // did when the message came from one of them).
  const end = useCallback((why: string, tell = true) => {
    const ended = mine.current;
    endSession(store, why);
    setReason(why);
    setSession(null);
    setVagrant(null);
    setVagrantProblem("");
    if (tell && ended) channel?.postMessage({ type: "signed-out", reason: why, token: ended.token });
  }, [store, channel]);

  const adopt = useCallback((s: Session) => {
    saveSession(store, s);
    setReason("");
    setSession(s);
  }, [store]);

  // A sign-in through a provider came back (its session is stored already): tabs waiting on
  // the sign-in page sign in too, and this one opens the home page.
  useEffect(() => {
    if (arrival?.kind !== "session") return;
    channel?.postMessage({ type: "session", session: arrival.session });
    go(afterSignIn("/"));
  }, [arrival, channel, go]);

  // The other tabs: answer their asks, adopt a sign-in, end with their sign-out.
  useEffect(() => {
    if (!channel) return;
    const onMessage = (e: { data: unknown }) => {
      const act = onTabMessage(parseTabMessage(e.data), mine.current, Date.now());
      if (act.kind === "answer") channel.postMessage({ type: "session", session: act.session });
      else if (act.kind === "adopt") adopt(act.session);
      else if (act.kind === "end") end(act.reason, false);
    };
    channel.addEventListener("message", onMessage);
    return () => channel.removeEventListener("message", onMessage);
  }, [channel, adopt, end]);
  useEffect(() => {
    if (!asking || !channel) return;
    let live = true;
    void askOtherTabs(channel, Date.now).then((s) => {
      if (!live) return;
      if (s && !mine.current) adopt(s);
      setAsking(false);
    });
    return () => { live = false; };
  }, [asking, channel, adopt]);

  // Expiry sends the user back to sign-in at the moment auth stops accepting the token.
  useEffect(() => {
    if (!session) return;
    const ms = msUntilExpiry(session, Date.now());
    if (ms === null) return;
    const t = setTimeout(() => end("Your session expired. Sign in again.", false), Math.min(ms, 2 ** 31 - 1));
    return () => clearTimeout(t);
  }, [session, end]);

  // The Vagrant token: issued to this session by vagrant-server when the Vagrant page opens,
  // in memory only, renewed before it expires and when vagrant-server refuses it.
  const issuing = useRef(false);
  const issuedAt = useRef(0);
  const issueRef = useRef<() => void>(() => {});
  const onVagrantRefused = useCallback(() => {
    if (Date.now() - issuedAt.current >= vagrantRetryMs) issueRef.current();
  }, []);

  const clients = useMemo(
    () => makeClients(session?.token ?? "", vagrant?.token ?? "", (msg) => end(refusedMessage(msg)), undefined, onVagrantRefused),
    [session, vagrant, end, onVagrantRefused],
  );

  const issueVagrant = useCallback(async () => {
    if (issuing.current || !mine.current) return;
    issuing.current = true;
    issuedAt.current = Date.now();
    try {
      const r = await clients.sessionTokens.issueSessionToken({});
      setVagrant({ token: r.token, expiresAt: timestampMs(r.expiresAt) });
      setVagrantProblem("");
    } catch (err) {
      // A refused Plinth token has ended the session already (the clients' bearer check).
      setVagrant(null);
      setVagrantProblem(describeError(err));
    } finally {
      issuing.current = false;
    }
  }, [clients]);
  issueRef.current = () => void issueVagrant();

  const route = routeFor(path, session !== null);
  const current = route.page;
  const canonical = routePath(route);
  const onVagrant = current === "/vagrant";
  useEffect(() => {
    if (onVagrant && session && !vagrant && !vagrantProblem) void issueVagrant();
  }, [onVagrant, session, vagrant, vagrantProblem, issueVagrant]);
  useEffect(() => {
    if (!vagrant) return;
    const t = setTimeout(() => void issueVagrant(), Math.min(renewDelay(vagrant.expiresAt, Date.now()), 2 ** 31 - 1));
    return () => clearTimeout(t);
  }, [vagrant, issueVagrant]);

  useEffect(() => {
    // A path that names no page keeps its URL (the user sees what they asked for); nor does
    // a tab still asking the others for a session lose the address it was opened on.
    if (!asking && canonical !== path && current !== notFound) window.history.replaceState(null, "", canonical);
  }, [canonical, current, path, asking]);
  useEffect(() => {
    const p = pages.find((pg) => pg.path === current);
    const title = p ? (route.id ? `${route.id} · ${p.title}` : p.title) : current === notFound ? "Page not found" : "Sign in";
    document.title = `${title} · Plinth`;
  }, [current, route.id]);

  if (asking) return <p className="muted" role="status">Loading…</p>;

  if (!session || current === signInPath) {
    return (
      <SignIn
        auth={clients.auth}
        oidc={clients.oidc}
        message={reason}
        onSignedIn={(s) => {
          adopt(s);
          // Tabs on the sign-in page sign in too.
          channel?.postMessage({ type: "session", session: s });
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
      <a className="skip-link" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById("main")?.focus(); }}>Skip to content</a>
      <header className="top">
        <Link className="brand" to="/overview" go={go}>Plinth</Link>
        {/* Under 600 px the menu folds behind this button (CSS shows it only there). */}
        <button type="button" className="menu-toggle" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen((o) => !o)}>Menu</button>
        <nav aria-label="Main" id="main-nav" data-open={menuOpen}>
          <ul>
            {pages.filter((p) => p.path !== "/admin" || canAdminister(session.role)).map((p) => (
              <li key={p.path}>
                <a
                  href={p.path}
                  aria-current={p.path === current ? "page" : undefined}
                  onClick={(e) => { e.preventDefault(); setMenuOpen(false); go(p.path); }}
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
        {current === "/overview" && <Overview clients={clients} go={go} />}
        {current === "/storage" && <Storage stats={clients.stats} history={clients.history} cluster={clients.cluster} />}
        {current === "/vagrant" && !route.id && (
          <VagrantView client={clients.vagrant} runners={clients.runners} problem={vagrantProblem}
            onRetry={() => { setVagrantProblem(""); void issueVagrant(); }} canWrite={canWrite(session.role)} go={go} />
        )}
        {current === "/vagrant" && route.id && <VagrantJob client={clients.vagrant} jobId={route.id} go={go} problem={vagrantProblem} />}
        {current === "/clusters" && <Clusters kaas={clients.kaas} info={clients.kaasInfo} canWrite={canWrite(session.role)} name={route.id} go={go} />}
        {current === "/volumes" && !route.id && (
          <Volumes lv={clients.lv} vg={clients.vg} volumes={clients.volumes} jobs={clients.lvmdJobs} canWrite={canWrite(session.role)} go={go} />
        )}
        {current === "/volumes" && route.id && (
          <VolumePage volumes={clients.volumes} lv={clients.lv} vg={clients.vg} jobs={clients.lvmdJobs} name={route.id} canWrite={canWrite(session.role)} go={go} />
        )}
        {current === "/admin" && <Admin admin={clients.admin} me={session.username} />}
        {current === "/backups" && !route.id && <Backups catalog={clients.catalog} go={go} />}
        {current === "/backups" && route.id && <BackupServer catalog={clients.catalog} name={route.id} go={go} />}
        {current === "/activity" && <Activity history={clients.history} />}
        {current === notFound && (
          <>
            <div className="page-head"><h1>Page not found</h1></div>
            <p role="status">
              The console has no page at <code>{path}</code>.{" "}
              <Link to="/overview" go={go}>Go to the overview</Link>, or pick a page from the menu.
            </p>
          </>
        )}
      </main>
    </div>
  );
}
