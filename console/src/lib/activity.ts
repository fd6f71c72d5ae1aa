// View logic of the Activity page (stats' plinth.stats.v1.HistoryService ListActivity): the
// audit trail of who changed which cluster or volume, as the services' events told it.
import type { Activity, ListActivityResponse } from "../gen/plinth/stats/v1/history_pb";

/** Entries per ListActivity page. */
export const activityPageSize = 100;

/** Who caused an entry, in words: the user's name (or id when the event had no name), or
 * "system" for the services' own work (a reconciler, the agent finding a change). */
export function actorText(a: Activity): { text: string; system: boolean } {
  if (a.actorUsername) return { text: a.actorUsername, system: false };
  if (a.actorUserId) return { text: a.actorUserId, system: false };
  return { text: "system", system: true };
}

/** What an entry is about, from its subject (plinth.<service>.<entity>.<verb>): "cluster",
 * "volume", or the entity as it is. */
export function activityEntity(subject: string): string {
  const parts = subject.split(".");
  return parts.length >= 3 ? parts[2] : subject;
}

/** Entries so far plus the next page, newest first, without duplicates (an entry listed twice
 * when new ones moved the page boundary appears once). */
export function appendActivity(entries: Activity[], page: ListActivityResponse): Activity[] {
  const seen = new Set(entries.map((a) => a.id));
  return [...entries, ...page.activities.filter((a) => !seen.has(a.id))];
}

/** Only the entries a person caused, when userOnly; all of them otherwise. */
export function filterActivity(entries: Activity[], userOnly: boolean): Activity[] {
  return userOnly ? entries.filter((a) => !actorText(a).system) : entries;
}
