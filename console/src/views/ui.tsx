// Small building blocks every view uses: section headers, status lines, empty states.
import { useState, type ReactNode } from "react";

/** A failure in plain words, announced to screen readers; the service's raw words folded under Details. */
export function ErrorLine({ text, details }: { text: string; details?: string }) {
  if (!text) return null;
  return (
    <div className="error-line">
      <p className="error" role="alert">{text}</p>
      {details && <details><summary>Details</summary><pre className="raw">{details}</pre></details>}
    </div>
  );
}

/** A state in one sentence, what to do about it, and the whole raw story folded under Details. */
export function Explained({ summary }: { summary: { text: string; nextStep: string; details: string } }) {
  return (
    <div className="explained">
      <p className="summary">{summary.text}</p>
      {summary.nextStep && <p className="next-step"><strong>What to do:</strong> {summary.nextStep}</p>}
      {summary.details && <details><summary>Details</summary><pre className="raw">{summary.details}</pre></details>}
    </div>
  );
}

/** An action's outcome; secret (a generated password) follows it with a copy button. */
export function DoneLine({ text, secret }: { text: string; secret?: string }) {
  if (!text) return null;
  return (
    <p className="done" role="status">
      {text}
      {secret && <> <SecretValue value={secret} what="password" /></>}
    </p>
  );
}

/** A button that puts value on the clipboard, saying "Copied" for a moment. */
export function CopyButton({ value, text, label }: { value: string; text: string; label?: string }) {
  const [state, setState] = useState<"" | "copied" | "failed">("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setState("copied");
      setTimeout(() => setState(""), 2000);
    } catch {
      setState("failed");
    }
  };
  return (
    <>
      <button type="button" className="small" aria-label={state === "copied" ? "Copied" : label} onClick={() => void copy()}>{state === "copied" ? "Copied" : text}</button>
      {state === "failed" && <span className="muted"> the browser refused the clipboard: select it and copy</span>}
    </>
  );
}

/** A value shown once, with a button that puts it on the clipboard. */
export function SecretValue({ value, what }: { value: string; what: string }) {
  return (
    <span className="secret">
      <code data-testid="secret-value">{value}</code> <CopyButton value={value} text={`Copy ${what}`} />
    </span>
  );
}

/**
 * A long id shortened to its start (the whole of it in its title and data-id), with a button
 * that copies it whole; a link to the object's page when to and go are given.
 */
export function Id({ value, to, go }: { value: string; to?: string; go?: (p: string) => void }) {
  const long = value.length > 12;
  const code = <code title={value}>{long ? `${value.slice(0, 8)}…` : value}</code>;
  return (
    <span className="id" data-id={value}>
      {to && go ? <Link to={to} go={go}>{code}</Link> : code}
      {long && <> <CopyButton value={value} text="Copy" label={`Copy id ${value}`} /></>}
    </span>
  );
}

/**
 * A table's box, scrolling sideways on a narrow screen; focusable, so a keyboard can scroll it
 * (axe-core's scrollable-region-focusable).
 */
export function TableWrap({ children }: { children: ReactNode }) {
  return <div className="table-wrap" tabIndex={0} role="group" aria-label="Table (scrolls sideways on a narrow screen)">{children}</div>;
}

/** Loading before the first data arrives; the children once it has. */
export function Loading({ loading, has, what, children }: { loading: boolean; has: boolean; what: string; children: ReactNode }) {
  if (!has) return loading ? <p className="muted" role="status">Loading {what}…</p> : null;
  return <>{children}</>;
}

/** A link within the console: the browser's address changes through go (pushState), no reload. */
export function Link({ to, go, className, children }: { to: string; go: (p: string) => void; className?: string; children: ReactNode }) {
  return (
    <a className={className} href={to} onClick={(e) => {
      // A modified or middle click opens a new tab or window, as on any link.
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      go(to);
    }}>{children}</a>
  );
}

/** An object's page when its service does not know the object: the way back, a heading, why. */
export function NotFound({ title, back, children }: { title: string; back: ReactNode; children: ReactNode }) {
  return (
    <>
      <p className="crumbs">{back}</p>
      <div className="page-head"><h1>{title}</h1></div>
      <p role="status">{children} {back}</p>
    </>
  );
}

/** A titled panel of a page. */
export function Panel({ title, actions, children, id }: { title: string; actions?: ReactNode; children: ReactNode; id?: string }) {
  const hid = id ? `${id}-h` : undefined;
  return (
    <section className="panel" aria-labelledby={hid} id={id}>
      <div className="panel-head">
        <h2 id={hid}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** When data was last refreshed. */
export function Refreshed({ at, loading, onReload }: { at: number; loading: boolean; onReload: () => void }) {
  return (
    <span className="refreshed">
      <span className="muted">{at ? `Updated ${new Date(at).toLocaleTimeString()}` : ""}</span>
      <button type="button" className="small" onClick={onReload} disabled={loading}>Refresh</button>
    </span>
  );
}
