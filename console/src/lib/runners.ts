// View logic of the Vagrant page's runner list: vagrant-server's Plinth RunnerService
// (every registered runner, online or not), fetched page by page up to a cap.
import type { ListRunnersResponse, Runner } from "../gen/plinth/vagrant/v1/runners_pb";
import type { Level } from "./stats";
import { ago, timestampMs } from "./format";

/** The most runners the page shows (vagrant-server pages by 500 at most). */
export const runnersShown = 1000;

/** The one call the list needs, so tests can pass a function. */
export type ListRunners = (req: { pageSize: number; pageToken: string }, opts?: { signal?: AbortSignal }) => Promise<ListRunnersResponse>;

/**
 * Every registered runner, following next_page_token, at most cap of them; more tells
 * whether the server had more than were fetched.
 */
export async function allRunners(list: ListRunners, cap = runnersShown, signal?: AbortSignal): Promise<{ runners: Runner[]; more: boolean }> {
  const runners: Runner[] = [];
  let pageToken = "";
  for (;;) {
    const page = await list({ pageSize: Math.min(500, cap - runners.length), pageToken }, { signal });
    runners.push(...page.runners);
    if (!page.nextPageToken) return { runners, more: false };
    if (runners.length >= cap) return { runners: runners.slice(0, cap), more: true };
    pageToken = page.nextPageToken;
  }
}

/** Online runners first, then by id. */
export function sortRunners(rs: Runner[]): Runner[] {
  return [...rs].sort((a, b) => Number(b.online) - Number(a.online) || a.id.localeCompare(b.id));
}

/** A runner's state as a level and words, with when it was last seen when offline. */
export function runnerState(r: Runner, now: number): { level: Level; text: string } {
  if (r.online) return { level: "ok", text: "Online" };
  const seen = timestampMs(r.lastSeen);
  return { level: "err", text: seen ? `Offline (last seen ${ago(seen, now)})` : "Offline" };
}

/** What the runner can take: its components, or that it makes no claims. */
export function runnerComponents(r: Runner): string {
  const parts = r.components.map((c) => (c.name ? `${c.type.toLowerCase()} ${c.name}` : c.type.toLowerCase()));
  const what = parts.length ? parts.join(", ") : "any job (no components declared)";
  return r.byIdOnly ? `${what}; only jobs addressed to it` : what;
}

/** The job the runner holds now, in words; "" when it holds none. */
export function runnerJob(r: Runner): string {
  const j = r.currentJob;
  if (!j) return "";
  const state = j.state === "RUNNING" ? "running" : j.state === "WAITING" ? "assigned" : j.state.toLowerCase();
  return `${state} ${j.operation} job ${j.id}`;
}
