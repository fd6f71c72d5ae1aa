// A job's output, streamed live from vagrant-server (GetJobStream, server streaming over
// Connect): the output so far, then new lines as the runner sends them, then how it ended.
import { useEffect, useRef, useState } from "react";
import type { Client } from "@connectrpc/connect";
import { Job_State, type Vagrant } from "../gen/hashicorp/vagrant/server_pb";
import { describeError } from "../lib/errors";
import { jobState, terminalLines } from "../lib/vagrant";
import { ErrorLine } from "./ui";

export function JobOutput({ client, jobId, onClose }: { client: Client<typeof Vagrant>; jobId: string; onClose: () => void }) {
  const [lines, setLines] = useState<string[]>([]);
  const [state, setState] = useState<Job_State>(Job_State.UNKNOWN);
  const [canceling, setCanceling] = useState(false);
  const [ended, setEnded] = useState("");
  const [error, setError] = useState("");
  const [live, setLive] = useState(false);
  const pre = useRef<HTMLPreElement>(null);

  useEffect(() => {
    const ctl = new AbortController();
    setLines([]);
    setEnded("");
    setError("");
    setState(Job_State.UNKNOWN);
    (async () => {
      try {
        for await (const msg of client.getJobStream({ jobId }, { signal: ctl.signal })) {
          const ev = msg.event;
          if (ev.case === "open") setLive(true);
          else if (ev.case === "state") {
            setState(ev.value.current);
            setCanceling(ev.value.canceling);
          } else if (ev.case === "terminal") {
            const add = terminalLines(ev.value.events);
            if (add.length) setLines((l) => [...l, ...add]);
          } else if (ev.case === "error") {
            setError(ev.value.error?.message || "The job stream reported an error.");
          } else if (ev.case === "complete") {
            const e = ev.value.error;
            setEnded(e && e.code !== 0 ? `Ended with an error: ${e.message}` : "Completed.");
          }
        }
      } catch (err) {
        if (!ctl.signal.aborted) setError(describeError(err));
      } finally {
        if (!ctl.signal.aborted) setLive(false);
      }
    })();
    return () => ctl.abort();
  }, [client, jobId]);

  useEffect(() => {
    const el = pre.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [lines]);

  const st = jobState(state, canceling);
  return (
    <section className="panel output" aria-labelledby="output-h">
      <div className="panel-head">
        <h2 id="output-h">Output of job <code>{jobId}</code></h2>
        <button type="button" className="small" onClick={onClose}>Close</button>
      </div>
      <p>
        <span className={`badge ${st.level}`} data-testid="job-state">{st.text}</span>{" "}
        {canceling && <span className="muted">cancel requested… </span>}
        <span className="muted">{live ? "streaming live" : ended ? "" : "not connected"}</span>
      </p>
      <pre ref={pre} className="terminal" tabIndex={0} aria-live="polite" aria-label="Job output" data-testid="job-output">
        {lines.length ? lines.join("\n") : live ? "Waiting for output…" : ""}
      </pre>
      {ended && <p role="status" data-testid="job-ended">{ended}</p>}
      <ErrorLine text={error} />
    </section>
  );
}
