// What an operator does with a listed backup: restore it into a new volume (name, device
// class, size at least the backup's; the store's keys when it is not the agent's own, the key
// of an encrypted one), or delete it with its objects after typing its name.
import { useState, type FormEvent } from "react";
import type { Client } from "@connectrpc/connect";
import type { VGService } from "../gen/lvmd/lvmd_pb";
import type { Job, JobService } from "../gen/plinth/lvmd/v1/jobs_pb";
import { formatBytes } from "../lib/format";
import { useAction, usePoll } from "../lib/hooks";
import { storeWords } from "../lib/storeWords";
import { className, confirmed, deviceClasses, restoreProblem, sizeGiB, type RestoreForm } from "../lib/volumes";
import { DoneLine, ErrorLine, Panel } from "./ui";

/** The node's device classes: the first message of lvmd-agent's capacity watch. */
function useClasses(vg: Client<typeof VGService>) {
  return usePoll(async (signal) => {
    const ctl = new AbortController();
    signal.addEventListener("abort", () => ctl.abort());
    try {
      for await (const w of vg.watch({}, { signal: ctl.signal })) return deviceClasses(w);
    } finally {
      ctl.abort();
    }
    return [];
  }, 0, [vg]);
}

export function JobAction({ kind, job, jobs, vg, onClose, onDone }: {
  kind: "restore" | "delete"; job: Job; jobs: Client<typeof JobService>; vg: Client<typeof VGService>; onClose: () => void; onDone: () => Promise<void>;
}) {
  return kind === "restore"
    ? <Restore job={job} jobs={jobs} vg={vg} onClose={onClose} onDone={onDone} />
    : <Delete job={job} jobs={jobs} onClose={onClose} onDone={onDone} />;
}

function Restore({ job, jobs, vg, onClose, onDone }: { job: Job; jobs: Client<typeof JobService>; vg: Client<typeof VGService>; onClose: () => void; onDone: () => Promise<void> }) {
  const classes = useClasses(vg);
  const [form, setForm] = useState<RestoreForm>(() => ({
    name: `${job.volumeHandle}-restored`.slice(0, 100), deviceClass: job.deviceClass, sizeGb: Number(sizeGiB(job.sizeBytes)),
    accessKeyId: "", secretAccessKey: "", encryptionKey: "",
  }));
  const [problem, setProblem] = useState<{ field: keyof RestoreForm | ""; text: string }>({ field: "", text: "" });
  const act = useAction();
  const set = (k: keyof RestoreForm) => (e: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [k]: k === "sizeGb" ? Number(e.target.value) : e.target.value }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = restoreProblem(form, job.sizeBytes, !job.defaultStore, job.encrypted);
    setProblem(p);
    if (p.text) return;
    const ok = await act.run(async () => {
      const r = await jobs.restoreBackup({
        backupJobId: job.id, name: form.name, deviceClass: form.deviceClass, sizeBytes: BigInt(form.sizeGb) * 1024n ** 3n,
        encryptionKey: form.encryptionKey,
        credentials: job.defaultStore ? undefined : { accessKeyId: form.accessKeyId, secretAccessKey: form.secretAccessKey },
      });
      await onDone();
      return `Restoring ${job.name} into the new volume ${r.job?.name ?? form.name}: its progress shows on the new volume's page and under Backups and restores on Volumes.`;
    });
    if (ok) setForm((f) => ({ ...f, secretAccessKey: "", encryptionKey: "" }));
  };
  const field = (k: keyof RestoreForm, label: string, extra: { type?: string; autoComplete?: string; min?: number } = {}) => (
    <label>{label}
      <input name={`restore-${k}`} value={form[k]} onChange={set(k)} aria-invalid={problem.field === k || undefined}
        aria-describedby={problem.field === k ? "restore-problem" : undefined} {...extra} />
    </label>
  );
  return (
    <Panel title={`Restore ${job.name}`} id="restore-backup" actions={<button type="button" className="small" onClick={onClose}>Close</button>}>
      <p className="muted small-text">
        A new volume is made and the backup ({formatBytes(job.sizeBytes)} of volume {job.volumeHandle}) is copied into it from {job.location},
        then verified. {job.defaultStore ? "It is in this agent's store: no keys are needed." : "It is not in this agent's store: give that store's keys."}
      </p>
      <form onSubmit={submit} className="stack" noValidate>
        <div className="row wrap">
          {field("name", "New volume name")}
          <label>Device class
            <select name="restore-deviceClass" value={form.deviceClass} onChange={set("deviceClass")}>
              {(classes.data ?? [{ name: job.deviceClass, freeBytes: 0n }]).map((c) => (
                <option key={c.name} value={c.name}>{className(c.name)}{classes.data ? ` (${formatBytes(c.freeBytes)} free)` : ""}</option>
              ))}
            </select>
          </label>
          {field("sizeGb", "Size (GiB)", { type: "number", min: Number(sizeGiB(job.sizeBytes)) })}
        </div>
        {(!job.defaultStore || job.encrypted) && (
          <div className="row wrap">
            {!job.defaultStore && field("accessKeyId", "Access key id", { autoComplete: "off" })}
            {!job.defaultStore && field("secretAccessKey", "Secret access key", { type: "password", autoComplete: "off" })}
            {job.encrypted && field("encryptionKey", "Encryption key", { type: "password", autoComplete: "off" })}
          </div>
        )}
        <div><button type="submit" disabled={act.busy}>{act.busy ? "Starting…" : "Restore"}</button></div>
      </form>
      <div id="restore-problem"><ErrorLine text={problem.text || storeWords(act.error)} details={problem.text ? "" : act.details || (storeWords(act.error) !== act.error ? act.error : "")} /></div>
      <DoneLine text={act.done} />
    </Panel>
  );
}

function Delete({ job, jobs, onClose, onDone }: { job: Job; jobs: Client<typeof JobService>; onClose: () => void; onDone: () => Promise<void> }) {
  const [typed, setTyped] = useState("");
  const [keys, setKeys] = useState({ accessKeyId: "", secretAccessKey: "" });
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!confirmed(typed, job.name)) return;
    await act.run(async () => {
      const r = await jobs.deleteBackup({ backupJobId: job.id, credentials: job.defaultStore ? undefined : keys });
      await onDone();
      return `Deleted backup ${job.name} (${r.objectsDeleted} objects).`;
    });
  };
  return (
    <Panel title={`Delete backup ${job.name}`} id="delete-backup" actions={<button type="button" className="small" onClick={onClose}>Close</button>}>
      <form onSubmit={submit} className="stack" noValidate>
        <p>Its objects are deleted from {job.location}; it cannot be restored afterwards. Type <code>{job.name}</code> to confirm.</p>
        <div className="row wrap">
          <label>Backup name to confirm<input name="confirm-name" value={typed} autoComplete="off" onChange={(e) => setTyped(e.target.value)} /></label>
          {!job.defaultStore && <>
            <label>Access key id<input name="delete-accessKeyId" value={keys.accessKeyId} autoComplete="off" onChange={(e) => setKeys((k) => ({ ...k, accessKeyId: e.target.value }))} /></label>
            <label>Secret access key<input name="delete-secretAccessKey" type="password" value={keys.secretAccessKey} autoComplete="off" onChange={(e) => setKeys((k) => ({ ...k, secretAccessKey: e.target.value }))} /></label>
          </>}
        </div>
        <div><button type="submit" className="danger" disabled={act.busy || !confirmed(typed, job.name)}>{act.busy ? "Deleting…" : "Delete backup"}</button></div>
      </form>
      <ErrorLine text={storeWords(act.error)} details={act.details || (storeWords(act.error) !== act.error ? act.error : "")} />
      <DoneLine text={act.done} />
    </Panel>
  );
}
