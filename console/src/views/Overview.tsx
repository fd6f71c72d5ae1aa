// The overview: one card per service with its state and what needs attention (storage health
// checks, clusters not running, failed volume backups and restores, WAL archiving failures,
// offline runners), each item linking to the object. Each card loads on its own: a service
// that does not answer leaves the others.
import type { ReactNode } from "react";
import type { Clients } from "../lib/clients";
import { usePoll, type Loaded } from "../lib/hooks";
import { allRunners, runnersShown } from "../lib/runners";
import { capacity } from "../lib/stats";
import { archivingCard, clustersCard, runnersCard, shownItems, storageCard, volumeJobsCard, type Card } from "../lib/overview";
import { ErrorLine, Link } from "./ui";

const refreshMs = 10_000;
/** The volume jobs the card looks at: the newest ones. */
const recentJobs = 50;

export function Overview({ clients, go }: { clients: Clients; go: (p: string) => void }) {
  const storage = usePoll(async (signal) => {
    const [s, d] = await Promise.all([
      clients.stats.getClusterStats({}, { signal }),
      clients.cluster.getClusterDetail({}, { signal }).catch(() => undefined),
    ]);
    return storageCard(d?.health || s.stats?.status || "", capacity(s.stats?.data?.usage), d?.checks ?? []);
  }, refreshMs, [clients.stats, clients.cluster]);
  const clusters = usePoll(async (signal) => clustersCard((await clients.kaas.getClusterList({}, { signal })).clusters), refreshMs, [clients.kaas]);
  const volumes = usePoll(async (signal) => volumeJobsCard((await clients.lvmdJobs.listJobs({ pageSize: recentJobs }, { signal })).jobs), refreshMs, [clients.lvmdJobs]);
  const archiving = usePoll(async (signal) => archivingCard((await clients.catalog.listServers({}, { signal })).servers, Date.now()), refreshMs, [clients.catalog]);
  const runners = usePoll(async (signal) => {
    const r = await allRunners((req, opts) => clients.runners.listRunners(req, opts), runnersShown, signal);
    return runnersCard(r.runners, Date.now());
  }, refreshMs, [clients.runners]);

  return (
    <>
      <div className="page-head"><h1>Overview</h1></div>
      <div className="cards">
        <ServiceCard title="Storage" to="/storage" go={go} loaded={storage} />
        <ServiceCard title="Clusters" to="/clusters" go={go} loaded={clusters} />
        <ServiceCard title="Volumes" to="/volumes" go={go} loaded={volumes} />
        <ServiceCard title="WAL archiving" to="/backups" go={go} loaded={archiving} />
        <ServiceCard title="Vagrant runners" to="/vagrant" go={go} loaded={runners} />
      </div>
    </>
  );
}

function ServiceCard({ title, to, go, loaded }: { title: string; to: string; go: (p: string) => void; loaded: Loaded<Card> }) {
  const c = loaded.data;
  const id = `card-${to.slice(1)}`;
  let body: ReactNode;
  if (!c) {
    body = loaded.error ? <ErrorLine text={loaded.error} details={loaded.details} /> : <p className="muted" role="status">Loading…</p>;
  } else {
    body = (
      <>
        <p><span className={`badge ${c.level}`} data-testid="card-state">{c.state}</span> {c.summary}</p>
        {c.items.length > 0 && (
          <ul className="attention">
            {c.items.slice(0, shownItems).map((i, n) => (
              <li key={n}><span className={`dot ${i.level}`} aria-hidden="true" /> <Link to={i.to} go={go}>{i.text}</Link></li>
            ))}
            {c.items.length > shownItems && <li className="muted">and {c.items.length - shownItems} more on <Link to={to} go={go}>{title}</Link></li>}
          </ul>
        )}
        {loaded.error && <ErrorLine text={`Not refreshed: ${loaded.error}`} details={loaded.details} />}
      </>
    );
  }
  return (
    <section className="panel card" aria-labelledby={`${id}-h`} id={id} data-level={c?.level ?? "unknown"}>
      <div className="panel-head">
        <h2 id={`${id}-h`}><Link to={to} go={go}>{title}</Link></h2>
      </div>
      {body}
    </section>
  );
}
