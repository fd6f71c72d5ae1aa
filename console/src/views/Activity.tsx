// Activity (stats' plinth.stats.v1.HistoryService ListActivity): the audit trail, newest
// first: who created, deleted, scaled or upgraded a cluster, created, removed or resized a
// volume, and what the services did on their own ("system").
import { useState } from "react";
import type { Client } from "@connectrpc/connect";
import type { Activity as Entry, HistoryService } from "../gen/plinth/stats/v1/history_pb";
import { activityEntity, activityPageSize, actorText, appendActivity, filterActivity } from "../lib/activity";
import { timestampMs, when } from "../lib/format";
import { usePoll } from "../lib/hooks";
import { ErrorLine, Loading, Panel, Refreshed, TableWrap } from "./ui";

type HistoryClient = Client<typeof HistoryService>;

/** Loads the first `pages` pages; more is true when older entries exist. */
async function loadActivity(history: HistoryClient, pages: number, signal: AbortSignal): Promise<{ entries: Entry[]; more: boolean }> {
  let entries: Entry[] = [];
  let token = "";
  for (let i = 0; i < pages; i++) {
    const page = await history.listActivity({ pageSize: activityPageSize, pageToken: token }, { signal });
    entries = appendActivity(entries, page);
    token = page.nextPageToken;
    if (!token) break;
  }
  return { entries, more: token !== "" };
}

export function Activity({ history }: { history: HistoryClient }) {
  const [pages, setPages] = useState(1);
  const [userOnly, setUserOnly] = useState(false);
  const list = usePoll((signal) => loadActivity(history, pages, signal), 5000, [history, pages]);
  const shown = filterActivity(list.data?.entries ?? [], userOnly);
  return (
    <>
      <div className="page-head">
        <h1>Activity</h1>
        <Refreshed at={list.at} loading={list.loading} onReload={list.reload} />
      </div>
      <ErrorLine text={list.error} details={list.details} />
      <Loading loading={list.loading} has={list.data !== undefined} what="the activity">
        <Panel title="Who changed what" id="activity">
          <div className="row wrap">
            <label className="check"><input name="user-only" type="checkbox" checked={userOnly} onChange={(e) => setUserOnly(e.target.checked)} />Only changes made by people</label>
          </div>
          {shown.length === 0 ? <p className="muted">No changes recorded yet.</p> : (
            <TableWrap>
              <table>
                <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Change</th></tr></thead>
                <tbody>
                  {shown.map((a) => {
                    const who = actorText(a);
                    return (
                      <tr key={a.id.toString()} data-activity={a.id.toString()}>
                        <td className="small-text">{when(timestampMs(a.time))}</td>
                        <td>{who.system ? <span className="muted">{who.text}</span> : <strong title={a.actorUserId}>{who.text}</strong>}</td>
                        <td>{activityEntity(a.subject)}</td>
                        <td>{a.summary}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
          )}
          {list.data?.more && <button type="button" className="small" onClick={() => setPages(pages + 1)} disabled={list.loading}>Show older changes</button>}
        </Panel>
      </Loading>
    </>
  );
}
