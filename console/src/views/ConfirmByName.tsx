// A destructive action confirmed by typing the object's name (GitHub's and the Ceph
// dashboard's rule): the button does nothing until the name is typed exactly, so a slip of the
// mouse never deletes a volume or a backup.
import { useId, useState, type ReactNode } from "react";
import { confirmed } from "../lib/volumes";

/**
 * A button (label) that opens a confirmation asking to type name; onConfirm runs once it
 * matches. busy disables it while the action runs.
 */
export function ConfirmByName({ label, name, what, busy, disabled, title, small, onConfirm }: {
  label: string; name: string; what: ReactNode; busy: boolean; disabled?: boolean; title?: string; small?: boolean; onConfirm: () => void;
}) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const id = useId();
  if (!open) {
    return (
      <button type="button" className={small ? "small danger" : "danger"} disabled={busy || disabled} title={title}
        onClick={() => { setTyped(""); setOpen(true); }}>{label}</button>
    );
  }
  const ok = confirmed(typed, name);
  return (
    <form className="confirm stack" role="group" aria-labelledby={`${id}-q`} onSubmit={(e) => {
      e.preventDefault();
      if (!ok) return;
      setOpen(false);
      onConfirm();
    }}>
      <p id={`${id}-q`}>{what} Type <code>{name}</code> to confirm.</p>
      <label>Name to confirm
        <input name="confirm-name" value={typed} autoComplete="off" autoFocus onChange={(e) => setTyped(e.target.value)} />
      </label>
      <div className="row">
        <button type="submit" className={small ? "small danger" : "danger"} disabled={!ok || busy}>{label}</button>
        <button type="button" className={small ? "small" : undefined} onClick={() => setOpen(false)}>Cancel</button>
      </div>
    </form>
  );
}
