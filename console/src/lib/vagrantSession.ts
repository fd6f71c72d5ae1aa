// The Vagrant page's one sign-in: vagrant-server's SessionTokenService gives the Plinth
// session a Vagrant token (bound to it, expiring with it, revoked with it), kept in memory
// only and asked for again before it expires; and the job form's runner choice, from the
// runners vagrant-server knows (a job for an id never registered would wait forever).
import type { Runner } from "../gen/plinth/vagrant/v1/runners_pb";
import { sortRunners } from "./runners";

/** A Vagrant token for this session (a secret: never stored, never shown). */
export interface VagrantSession {
  token: string;
  /** When vagrant-server stops accepting it, in ms since the epoch. */
  expiresAt: number;
}

/** A token is asked for again this long before it expires, at the latest. */
export const renewBeforeMs = 60_000;

/**
 * When to ask for the next token (ms from now): at four fifths of its remaining life, and at
 * least renewBeforeMs before it expires; never sooner than a second (a clock ahead of the
 * server's must not make the console ask in a loop).
 */
export function renewDelay(expiresAt: number, now: number): number {
  const left = expiresAt - now;
  return Math.max(1_000, Math.min(left * 0.8, left - renewBeforeMs));
}

/** One choice of the job form's runner select. */
export interface RunnerChoice {
  /** The runner id, "" for any runner. */
  value: string;
  label: string;
}

/**
 * The runner choices: any runner first, then every registered runner (online first, then by
 * id). An offline runner may be chosen — it is registered, and the job waits for it as
 * upstream's queue does — and says so.
 */
export function runnerChoices(runners: Runner[]): RunnerChoice[] {
  const out: RunnerChoice[] = [{ value: "", label: "Any runner" }];
  for (const r of sortRunners(runners)) {
    const only = r.byIdOnly ? ", only jobs addressed to it" : "";
    out.push({ value: r.id, label: r.online ? `${r.id} (online${only})` : `${r.id} (offline: the job waits for it${only})` });
  }
  return out;
}

/** The choice to keep after the list changed: the same runner if it is still listed, else any. */
export function keptChoice(choice: string, runners: Runner[]): string {
  return choice === "" || runners.some((r) => r.id === choice) ? choice : "";
}
