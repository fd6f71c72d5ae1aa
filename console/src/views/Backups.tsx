// Backups (cnpgi-plugin's catalog): per PostgreSQL server, the archived WAL range, the last
// archive and any failure, the recovery window; a page per server (/backups/<server>) with
// its base backups in each store that holds it; how to connect a cluster (in full while there
// is none).
import type { ReactNode } from "react";
import { Code, type Client } from "@connectrpc/connect";
import type { CatalogService, Server } from "../gen/plinth/cnpgi/v1/catalog_pb";
import { archiveHealth, backupStatus, backupWAL, lastArchive, newestFirst, recoveryWindow, serverKey, walRange } from "../lib/backups";
import { formatBytes, timestampMs, when } from "../lib/format";
import { usePoll } from "../lib/hooks";
import { objectPath } from "../lib/routes";
import { ErrorLine, Link, Loading, NotFound, Panel, Refreshed, TableWrap } from "./ui";
import { ConnectGuide } from "./BackupsConnect";

export function Backups({ catalog, go }: { catalog: Client<typeof CatalogService>; go: (p: string) => void }) {
  const list = usePoll(async (signal) => (await catalog.listServers({}, { signal })).servers, 10000, [catalog]);
  const now = list.at || Date.now();
  return (
    <>
      <div className="page-head">
        <h1>Backups</h1>
        <Refreshed at={list.at} loading={list.loading} onReload={list.reload} />
      </div>
      <ErrorLine text={list.error} details={list.details} />
      <Loading loading={list.loading} has={list.data !== undefined} what="the backup catalog">
        <Panel title="Servers" id="backup-servers">
          {list.data?.length === 0 ? (
            <p className="muted">No server has archived WAL or taken a base backup through the plugin yet. Connect a PostgreSQL cluster as below.</p>
          ) : (
            <TableWrap>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Server</th><th scope="col">Store</th><th scope="col">Archived WAL</th><th scope="col">Last archive</th>
                    <th scope="col">Archiving</th><th scope="col">Recovery window</th><th scope="col">Backups</th><th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data?.map((s) => {
                    const key = serverKey(s);
                    const h = archiveHealth(s.wal, now);
                    return (
                      <tr key={key} data-server={key}>
                        <td><Link to={objectPath("/backups", s.serverName)} go={go}>{s.serverName}</Link></td>
                        <td>{s.objectStore}</td>
                        <td className="small-text" data-testid="wal-range">{walRange(s.wal)}</td>
                        <td className="small-text">{lastArchive(s.wal, now)}</td>
                        <td><span className={`badge ${h.level}`}>{h.text}</span>{h.detail && <div className="muted small-text">{h.detail}</div>}</td>
                        <td className="small-text">{recoveryWindow(s)}</td>
                        <td>{s.completedBackups.toString()}</td>
                        <td className="actions">
                          <Link to={objectPath("/backups", s.serverName)} go={go} className="button small">Base backups</Link>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Panel>
        {list.data?.length === 0 ? (
          <Panel title="Connect a PostgreSQL cluster" id="backup-connect"><ConnectGuide /></Panel>
        ) : list.data && (
          <details className="panel" id="backup-connect">
            <summary>Connect another PostgreSQL cluster</summary>
            <ConnectGuide />
          </details>
        )}
      </Loading>
    </>
  );
}

/**
 * One PostgreSQL server's page (/backups/<server>): the server in every object store that
 * holds something of it (a server name is unique within a store), each with its base backups.
 */
export function BackupServer({ catalog, name, go }: { catalog: Client<typeof CatalogService>; name: string; go: (p: string) => void }) {
  const list = usePoll(async (signal) => (await catalog.listServers({}, { signal })).servers.filter((s) => s.serverName === name), 10000, [catalog, name]);
  const back: ReactNode = <Link to="/backups" go={go}>All servers</Link>;
  if (list.data?.length === 0) {
    return (
      <NotFound title="Server not found" back={back}>
        The backup catalog holds nothing of a server <code>{name}</code>: it has archived no WAL and taken no base backup through the plugin.
      </NotFound>
    );
  }
  return (
    <>
      <p className="crumbs">{back}</p>
      <div className="page-head">
        <h1>Server {name}</h1>
        <Refreshed at={list.at} loading={list.loading} onReload={list.reload} />
      </div>
      <ErrorLine text={list.error} details={list.details} />
      <Loading loading={list.loading} has={list.data !== undefined} what="the server">
        {list.data?.map((s) => <ServerDetail key={serverKey(s)} catalog={catalog} listed={s} store={s.objectStore} name={name} />)}
      </Loading>
    </>
  );
}

function ServerDetail({ catalog, listed, store, name }: { catalog: Client<typeof CatalogService>; listed: Server; store: string; name: string }) {
  const got = usePoll(async (signal) => (await catalog.getServer({ objectStore: store, serverName: name }, { signal })).server, 10000, [catalog, store, name]);
  const s = got.data ?? listed;
  const now = got.at || Date.now();
  const gone = got.code === Code.NotFound;
  return (
    <Panel title={`In object store ${store}`} id={`backup-detail-${store}`}>
      {gone ? <p className="muted">The catalog no longer holds anything of this server.</p> : <ErrorLine text={got.error} details={got.details} />}
      {s && !gone && (
        <dl className="facts">
          <dt>Archived WAL</dt><dd>{walRange(s.wal)}</dd>
          <dt>Last archive</dt><dd>{lastArchive(s.wal, now)}</dd>
          <dt>Last failed archive</dt><dd>{timestampMs(s.wal?.lastFailedArchiveTime) ? `${when(timestampMs(s.wal?.lastFailedArchiveTime))}: ${s.wal?.lastFailedArchiveMessage || "no reason given"}` : "None since the plugin started"}</dd>
          <dt>Recovery window</dt><dd data-testid="recovery-window">{recoveryWindow(s)}</dd>
          <dt>Last successful backup</dt><dd>{when(timestampMs(s.lastSuccessfulBackupTime))}</dd>
          <dt>Last failed backup</dt><dd>{when(timestampMs(s.lastFailedBackupTime))}</dd>
        </dl>
      )}
      <h3>Base backups</h3>
      <Loading loading={got.loading} has={got.data !== undefined} what="base backups">
        {got.data?.baseBackups.length === 0 ? <p className="muted">No base backup yet. Back up the cluster (a CloudNativePG Backup with this plugin) to open a recovery window.</p> : (
          <TableWrap>
            <table>
              <thead>
                <tr><th scope="col">Backup</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">WAL</th><th scope="col">Size</th><th scope="col">Instance</th></tr>
              </thead>
              <tbody>
                {newestFirst(got.data?.baseBackups ?? []).map((b) => {
                  const st = backupStatus(b.status);
                  return (
                    <tr key={b.backupId} data-backup={b.backupId}>
                      <td>{b.backupId}{b.backupName && <div className="muted small-text">{b.backupName}</div>}</td>
                      <td><span className={`badge ${st.level}`}>{st.text}</span>{b.error && <div className="muted small-text">{b.error}</div>}</td>
                      <td className="small-text">{when(timestampMs(b.startTime))}</td>
                      <td className="small-text">{when(timestampMs(b.endTime))}</td>
                      <td className="small-text">{backupWAL(b)}</td>
                      <td>{formatBytes(b.sizeBytes)}{b.storedBytes > 0n && <div className="muted small-text">{formatBytes(b.storedBytes)} stored</div>}</td>
                      <td>{b.instance || "—"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Loading>
    </Panel>
  );
}
