// One volume's own page (/volumes/<name>): what it is on the node (class, volume group, device
// path, exact size, tags, the job holding it), grow it, back it up to S3, its backups and
// restores, remove it. Linked from the Volumes page's rows.
import { useState, type FormEvent, type ReactNode } from "react";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { LVService, VGService } from "../gen/lvmd/lvmd_pb";
import type { JobService } from "../gen/plinth/lvmd/v1/jobs_pb";
import type { Volume, VolumeService } from "../gen/plinth/lvmd/v1/volumes_pb";
import { useAction, usePoll } from "../lib/hooks";
import { readOnlyNotice } from "../lib/roles";
import { backupProblem, bucketOf, className, initialBackupForm, loadBackupChoice, resizeProblem, saveBackupChoice, sizeGiB, type BackupForm } from "../lib/volumes";
import { storeWords } from "../lib/storeWords";
import { ConfirmByName } from "./ConfirmByName";
import { CopyButton, DoneLine, ErrorLine, Link, Loading, NotFound, Panel, Refreshed } from "./ui";
import { VolumeJobs } from "./VolumeJobs";

interface Props {
  volumes: Client<typeof VolumeService>;
  lv: Client<typeof LVService>;
  vg: Client<typeof VGService>;
  jobs: Client<typeof JobService>;
  name: string;
  canWrite: boolean;
  go: (p: string) => void;
}

export function VolumePage({ volumes, lv, vg, jobs, name, canWrite, go }: Props) {
  // A removed volume is not asked for again (Refresh does).
  const got = usePoll((signal) => volumes.getVolume({ name }, { signal }), 5000, [volumes, name], { stopOn: [Code.NotFound] });
  const back: ReactNode = <Link to="/volumes" go={go}>All volumes</Link>;
  if (got.code === Code.NotFound) {
    return <NotFound title="Volume not found" back={back}>No device class of this node holds a volume <code>{name}</code>.</NotFound>;
  }
  const v = got.data?.volume;
  return (
    <>
      <p className="crumbs">{back}</p>
      <div className="page-head">
        <h1>Volume {name}</h1>
        <Refreshed at={got.at} loading={got.loading} onReload={got.reload} />
      </div>
      <ErrorLine text={got.error} details={got.details} />
      <Loading loading={got.loading} has={v !== undefined} what="the volume">
        {v && (
          <>
            <Facts v={v} />
            {canWrite ? (
              <>
                <Resize v={v} lv={lv} vg={vg} onDone={got.reload} />
                <Backup v={v} lv={lv} defaultEndpoint={got.data?.defaultBackupEndpoint ?? ""} defaultBucket={got.data?.defaultBackupBucket ?? ""} />
                <Remove v={v} lv={lv} onRemoved={() => go("/volumes")} />
              </>
            ) : <p className="notice" role="status">{readOnlyNotice}</p>}
          </>
        )}
      </Loading>
      <VolumeJobs jobs={jobs} vg={vg} volume={name} canWrite={canWrite} onFinished={got.reload} />
    </>
  );
}

function Facts({ v }: { v: Volume }) {
  return (
    <Panel title="Volume" id="volume-facts">
      <dl className="facts">
        <dt>Size</dt><dd>{sizeGiB(v.sizeBytes).toString()} GiB <span className="muted">({v.sizeBytes.toString()} bytes)</span></dd>
        <dt>Device</dt>
        <dd>
          <code>{v.devicePath}</code> <CopyButton value={v.devicePath} text="Copy" label={`Copy the device path of ${v.name}`} />
          <div className="muted small-text">{v.active ? `active, device ${v.devMajor}:${v.devMinor}` : "inactive: no device node until the volume is activated"}</div>
        </dd>
        <dt>Device class</dt><dd>{className(v.deviceClass)}</dd>
        <dt>Volume group</dt><dd>{v.volumeGroup}</dd>
        <dt>Tags</dt><dd>{v.tags.join(", ") || "none"}</dd>
        <dt>In use</dt><dd>{v.inUseBy ? `by ${v.inUseBy}: it cannot be removed until that ends` : "no backup or restore holds it"}</dd>
      </dl>
    </Panel>
  );
}

function Resize({ v, lv, vg, onDone }: { v: Volume; lv: Client<typeof LVService>; vg: Client<typeof VGService>; onDone: () => Promise<void> }) {
  const [size, setSize] = useState(() => Number(sizeGiB(v.sizeBytes)) + 1);
  const [problem, setProblem] = useState("");
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = resizeProblem(size, v.sizeBytes, undefined);
    setProblem(p);
    if (p) return;
    await act.run(async () => {
      // The free space now, so a grow beyond it is said in numbers before lvmd-agent is asked.
      const free = (await vg.getFreeBytes({ deviceClass: v.deviceClass })).freeBytes;
      const over = resizeProblem(size, v.sizeBytes, free);
      if (over) throw new ConnectError(over, Code.FailedPrecondition);
      await lv.resizeLV({ name: v.name, sizeGb: BigInt(size), deviceClass: v.deviceClass });
      await onDone();
      return `Grew ${v.name} to ${size} GiB.`;
    });
  };
  return (
    <Panel title="Grow" id="volume-resize">
      <form onSubmit={submit} className="row wrap" noValidate>
        <label>New size (GiB)<input name="resize-size" type="number" value={size} onChange={(e) => setSize(Number(e.target.value))} /></label>
        <button type="submit" disabled={act.busy}>{act.busy ? "Growing…" : "Grow"}</button>
      </form>
      <p className="muted small-text">A volume only grows; the file system on it is grown by whoever mounts it (TopoLVM does on its next mount).</p>
      <ErrorLine text={problem || act.error} details={problem ? "" : act.details} />
      <DoneLine text={act.done} />
    </Panel>
  );
}

/** The browser's localStorage, or null where it is refused (a private window may refuse it). */
function localStore(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

function Backup({ v, lv, defaultEndpoint, defaultBucket }: { v: Volume; lv: Client<typeof LVService>; defaultEndpoint: string; defaultBucket: string }) {
  // The store the user last backed up to (kept in this browser), else the agent's own.
  const [form, setForm] = useState<BackupForm>(() => initialBackupForm(v.name, new Date(), defaultBucket, localStore() && loadBackupChoice(localStore()!)));
  const [problem, setProblem] = useState<{ field: keyof BackupForm | ""; text: string }>({ field: "", text: "" });
  const act = useAction();
  const useDefault = () => setForm(initialBackupForm(v.name, new Date(), defaultBucket, null));
  const onDefault = defaultEndpoint !== "" && !form.endpoint && !form.accessKeyId && !form.secretAccessKey;
  // The agent's store with a bucket other than its own (typed, or kept from an earlier choice):
  // said, with the way back, so the line never names one bucket while the path names another.
  const otherBucket = onDefault && defaultBucket !== "" && bucketOf(form.path) !== "" && bucketOf(form.path) !== defaultBucket ? bucketOf(form.path) : "";
  const set = (k: keyof BackupForm) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = backupProblem(form, defaultEndpoint !== "");
    setProblem(p);
    if (p.text) return;
    const ok = await act.run(async () => {
      const r = await lv.createBackup({
        backup: {
          name: form.name.trim(), volumeHandle: v.name,
          dataSource: { type: { case: "s3", value: {
            path: form.path, endpoint: form.endpoint, accessKeyId: form.accessKeyId, secretAccessKey: form.secretAccessKey,
            encryptionKey: form.encryptionKey, verifyTls: form.endpoint.startsWith("https://"),
          } } },
        },
      });
      return `Backup ${r.backupState?.name ?? form.name} started: its progress is below.`;
    });
    // The store is kept as the next default (in this browser, without secrets); the next
    // backup gets a new name and path; the secrets are not kept once sent.
    if (ok) {
      const ls = localStore();
      if (ls) saveBackupChoice(ls, form);
      const next = initialBackupForm(v.name, new Date(), defaultBucket, ls && loadBackupChoice(ls));
      setForm({ ...next, accessKeyId: form.accessKeyId });
    }
  };
  const field = (k: keyof BackupForm, label: string, extra: { type?: string; autoComplete?: string; placeholder?: string } = {}) => (
    <label>{label}
      <input name={`backup-${k}`} value={form[k]} onChange={set(k)} aria-invalid={problem.field === k || undefined}
        aria-describedby={problem.field === k ? "backup-problem" : undefined} {...extra} />
    </label>
  );
  return (
    <Panel title="Back up to S3" id="volume-backup">
      <p className="small-text" id="backup-store">
        {!defaultEndpoint ? "This agent has no store of its own: name the S3 endpoint, its keys, and the bucket first in the path."
          : otherBucket ? <>To this agent's store at <code>{defaultEndpoint}</code>, bucket <strong>{otherBucket}</strong> — not its own bucket, {defaultBucket}. <button type="button" className="small" onClick={useDefault}>Use {defaultBucket}</button></>
          : onDefault ? <>To this agent's store{defaultBucket ? <>: bucket <strong>{defaultBucket}</strong></> : ""} at <code>{defaultEndpoint}</code>{defaultBucket ? "" : " (its bucket is not known: put it first in the path)"}. Name an endpoint and keys to write elsewhere.</>
          : <>To the store named below. <button type="button" className="small" onClick={useDefault}>Use this agent's store{defaultBucket ? ` (${defaultBucket})` : ""}</button></>}
      </p>
      <p className="muted small-text">The volume is read from a snapshot, so it stays in use meanwhile.</p>
      <form onSubmit={submit} className="stack" noValidate>
        <div className="row wrap">
          {field("name", "Backup name")}
          {field("path", "Bucket and path", { placeholder: "bucket/path/to/backup" })}
        </div>
        <div className="row wrap">
          {field("endpoint", "S3 endpoint", { placeholder: defaultEndpoint ? "empty: this agent's store" : "https://s3.example.com" })}
          {field("accessKeyId", "Access key id", { autoComplete: "off" })}
          {field("secretAccessKey", "Secret access key", { type: "password", autoComplete: "off" })}
          {field("encryptionKey", "Encryption key (optional)", { type: "password", autoComplete: "off" })}
        </div>
        <div><button type="submit" disabled={act.busy}>{act.busy ? "Starting…" : "Back up"}</button></div>
      </form>
      <div id="backup-problem"><ErrorLine text={problem.text || storeWords(act.error)} details={problem.text ? "" : act.details || (storeWords(act.error) !== act.error ? act.error : "")} /></div>
      <DoneLine text={act.done} />
    </Panel>
  );
}

function Remove({ v, lv, onRemoved }: { v: Volume; lv: Client<typeof LVService>; onRemoved: () => void }) {
  const act = useAction();
  return (
    <Panel title="Remove" id="volume-remove">
      <p className="muted small-text">{v.inUseBy ? `Held by ${v.inUseBy}: lvmd-agent refuses to remove it until that ends.` : "Removing a volume destroys its data; its backups stay in S3."}</p>
      <ConfirmByName label="Remove volume" name={v.name} busy={act.busy} disabled={v.inUseBy !== ""}
        what={<>Remove volume <strong>{v.name}</strong>? Its data is lost.</>}
        onConfirm={() => void act.run(async () => {
          await lv.removeLV({ name: v.name, deviceClass: v.deviceClass });
          onRemoved();
          return `Removed ${v.name}.`;
        })} />
      <ErrorLine text={act.error} details={act.details} />
    </Panel>
  );
}
