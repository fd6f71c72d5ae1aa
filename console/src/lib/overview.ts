// The overview page's cards: one per service, its state in a word and what needs attention,
// each item linking to the object. Pure functions over what the services answer.
import { ClusterStatus, type ClusterItem } from "../gen/cnct/kaas/api/api_pb";
import { JobState, type Job } from "../gen/plinth/lvmd/v1/jobs_pb";
import type { Server } from "../gen/plinth/cnpgi/v1/catalog_pb";
import type { Runner } from "../gen/plinth/vagrant/v1/runners_pb";
import type { HealthCheck } from "../gen/plinth/stats/v1/cluster_pb";
import { archiveHealth } from "./backups";
import { checkText, orderChecks, severity } from "./cluster";
import { clusterStatus } from "./kaas";
import { jobKind } from "./jobs";
import { objectPath } from "./routes";
import { runnerState } from "./runners";
import { capacityText, health, type Capacity, type Level } from "./stats";

/** One thing that needs attention, and where to see it. */
export interface Attention {
  level: Level;
  text: string;
  /** The console path of the object (its own page). */
  to: string;
}

/** A card: the service's state in a word, one sentence, and what needs attention. */
export interface Card {
  level: Level;
  /** The state in a few words ("Healthy", "2 of 5 need attention"). */
  state: string;
  /** One sentence of what the service holds. */
  summary: string;
  items: Attention[];
}

/** How many attention items a card lists; the rest are counted ("and 3 more"). */
export const shownItems = 5;

/** The worst of levels ("unknown" only when there is nothing else). */
export function worst(levels: Level[]): Level {
  for (const l of ["err", "warn", "ok"] as Level[]) if (levels.includes(l)) return l;
  return "unknown";
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Storage: Ceph's (or the suite's own) health and capacity; its active health checks are the attention (muted ones not). */
export function storageCard(status: string, cap: Capacity | undefined, checks: HealthCheck[]): Card {
  const h = health(status);
  const items = orderChecks(checks).filter((c) => !c.muted).map((c) => {
    const l = severity(c.severity).level;
    return { level: l === "unknown" ? "warn" : l, text: checkText(c), to: "/storage" };
  });
  return { level: h.level, state: h.text, summary: cap ? `Capacity: ${capacityText(cap)}.` : "No capacity reading yet.", items };
}

/** Clusters: every cluster that is not running, with its state. */
export function clustersCard(clusters: ClusterItem[]): Card {
  const items = clusters
    .filter((c) => c.status !== ClusterStatus.RUNNING)
    .map((c) => {
      const st = clusterStatus(c.status);
      return { level: st.level, text: `${c.name}: ${st.text}`, to: objectPath("/clusters", c.name) };
    });
  if (clusters.length === 0) return { level: "ok", state: "No clusters", summary: "No cluster has been created.", items };
  const running = clusters.length - items.length;
  return {
    level: items.length ? worst(items.map((i) => i.level)) : "ok",
    state: items.length ? `${items.length} not running` : "All running",
    summary: `${plural(clusters.length, "cluster")}, ${running} running.`,
    items,
  };
}

/** Volumes: backups and restores that failed (an interrupted one can be asked again), and how many run. */
export function volumeJobsCard(jobs: Job[]): Card {
  const failed = jobs.filter((j) => j.state === JobState.ERROR);
  const running = jobs.filter((j) => j.state === JobState.IN_PROGRESS).length;
  const items = failed.map((j) => ({
    level: "err" as Level,
    text: `${jobKind(j.kind)} ${j.name} of ${j.volumeHandle} ${j.retryable ? "was interrupted" : "failed"}`,
    to: objectPath("/volumes", j.volumeHandle),
  }));
  return {
    level: items.length ? "err" : "ok",
    state: items.length ? `${plural(items.length, "job")} failed` : "No failed job",
    summary: `${plural(jobs.length, "recent backup or restore", "recent backups and restores")}${running ? `, ${running} running now` : ""}.`,
    items,
  };
}

/** WAL archiving: every PostgreSQL server whose archiving fails. */
export function archivingCard(servers: Server[], now: number): Card {
  const items = servers.flatMap((s) => {
    const h = archiveHealth(s.wal, now);
    return h.level === "err" ? [{ level: "err" as Level, text: `${s.serverName} (${s.objectStore}): ${h.detail}`, to: objectPath("/backups", s.serverName) }] : [];
  });
  if (servers.length === 0) return { level: "unknown", state: "No server yet", summary: "No PostgreSQL server archives through the plugin.", items };
  return {
    level: items.length ? "err" : "ok",
    state: items.length ? `${plural(items.length, "server")} failing` : "Archiving",
    summary: `${plural(servers.length, "PostgreSQL server")} in the catalog.`,
    items,
  };
}

/** Vagrant runners: every runner that is offline. */
export function runnersCard(runners: Runner[], now: number): Card {
  const items = runners.filter((r) => !r.online).map((r) => ({ level: "warn" as Level, text: `Runner ${r.id.slice(0, 12)}: ${runnerState(r, now).text}`, to: "/vagrant" }));
  const online = runners.length - items.length;
  if (runners.length === 0) return { level: "err", state: "No runner", summary: "No runner has registered: vagrant jobs (and kaas's machines) cannot run.", items };
  return {
    level: online === 0 ? "err" : items.length ? "warn" : "ok",
    state: online === 0 ? "All offline" : `${online} online`,
    summary: `${plural(runners.length, "runner")} registered, ${online} online.`,
    items,
  };
}
