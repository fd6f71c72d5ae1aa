// Sign-in input checked as auth checks it (upstream's validation rules), so the user learns
// of a typo before a round trip; auth still decides.

/** The problem with a username and password in words, or "" when auth may be asked. */
export function validateLogin(username: string, password: string): string {
  if (username.length < 3 || username.length > 24) return "The username has 3 to 24 characters.";
  if (!/^[a-zA-Z0-9_-]+$/.test(username)) return "The username has only letters, digits, '-' and '_'.";
  if (password.length < 6) return "The password has at least 6 characters.";
  if (new TextEncoder().encode(password).length > 70) return "The password has at most 70 bytes.";
  return "";
}
