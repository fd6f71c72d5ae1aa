// Sign-in input checked as auth checks it (upstream's validation rules), so the user learns
// of a typo before a round trip; auth still decides.

import { usernameProblem } from "./admin";

/** The problem with a username and password in words, or "" when auth may be asked. */
export function validateLogin(username: string, password: string): string {
  const u = usernameProblem(username);
  if (u) return u;
  if (password.length < 6) return "The password has at least 6 characters.";
  if (new TextEncoder().encode(password).length > 70) return "The password has at most 70 bytes.";
  return "";
}
