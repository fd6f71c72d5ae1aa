// React hooks shared by the views: periodic loading with error and loading states.
import { useCallback, useEffect, useRef, useState } from "react";
import { ConnectError, type Code } from "@connectrpc/connect";
import { explainError } from "./errors";

/** The state of data loaded from a service. */
export interface Loaded<T> {
  data: T | undefined;
  /** The last failure in plain words ("" when the last load succeeded). */
  error: string;
  /** What the service said of the last failure, when error does not say it (for "Details"). */
  details: string;
  /** The status code of the last failure (undefined when the last load succeeded). */
  code: Code | undefined;
  loading: boolean;
  /** When the data was last loaded (ms), 0 before the first success. */
  at: number;
  /**
   * Loads again now. The promise settles when a load that started after the call has ended
   * (with data or an error), so an action can report its outcome once the list shows it.
   */
  reload: () => Promise<void>;
}

/** Options of usePoll. */
export interface PollOptions {
  /** Failures after which polling pauses until reload (e.g. NotFound: the object is gone). */
  stopOn?: Code[];
}

/**
 * Calls load at once and then every intervalMs (0: only on reload), keeping the last good
 * data while a later load fails. The next load is scheduled when one ends, so loads never overlap.
 */
export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, intervalMs: number, deps: unknown[], opts: PollOptions = {}): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState("");
  const [details, setDetails] = useState("");
  const [code, setCode] = useState<Code>();
  const [loading, setLoading] = useState(true);
  const [at, setAt] = useState(0);
  const [tick, setTick] = useState(0);
  // Callers of reload waiting for the next load to end.
  const waiting = useRef<(() => void)[]>([]);
  // The caller lists what load depends on, as with useEffect.
  const run = useCallback(load, deps);
  const stopOn = useRef(opts.stopOn ?? []);
  stopOn.current = opts.stopOn ?? [];

  useEffect(() => {
    const ctl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const once = async () => {
      setLoading(true);
      let stop = false;
      try {
        const v = await run(ctl.signal);
        if (ctl.signal.aborted) return;
        setData(v);
        setError("");
        setDetails("");
        setCode(undefined);
        setAt(Date.now());
      } catch (err) {
        if (!ctl.signal.aborted) {
          const x = explainError(err);
          setError(x.text);
          setDetails(x.details);
          const c = ConnectError.from(err).code;
          setCode(c);
          stop = stopOn.current.includes(c);
        }
      } finally {
        if (!ctl.signal.aborted) {
          setLoading(false);
          for (const done of waiting.current.splice(0)) done();
          if (intervalMs > 0 && !stop) timer = setTimeout(once, intervalMs);
        }
      }
    };
    void once();
    return () => {
      ctl.abort();
      if (timer) clearTimeout(timer);
    };
  }, [run, intervalMs, tick]);

  const reload = () =>
    new Promise<void>((done) => {
      waiting.current.push(done);
      setTick((t) => t + 1);
    });
  return { data, error, details, code, loading, at, reload };
}

/** State of a user action (a form submit, a button): busy, and its outcome in words. */
/** The clear functions of the actions on screen (one page shows at a time). */
const mountedActions = new Set<() => void>();

export function useAction(): {
  busy: boolean;
  error: string;
  /** What the service said of the failure, when error does not say it. */
  details: string;
  done: string;
  run: (what: () => Promise<string | void>) => Promise<boolean>;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [details, setDetails] = useState("");
  const [done, setDone] = useState("");
  const clear = useRef(() => {
    setError("");
    setDetails("");
    setDone("");
  });
  useEffect(() => {
    const mine = clear.current;
    mountedActions.add(mine);
    return () => {
      mountedActions.delete(mine);
    };
  }, []);
  const run = async (what: () => Promise<string | void>) => {
    setBusy(true);
    // The next action clears what every action on the page last said: no error or success
    // of an earlier one stays beside this one's outcome.
    for (const c of mountedActions) c();
    try {
      const msg = await what();
      setDone(msg ?? "");
      return true;
    } catch (err) {
      const x = explainError(err);
      setError(x.text);
      setDetails(x.details);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, details, done, run };
}
