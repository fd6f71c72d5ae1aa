// The console's pages and their paths (the gateway serves index.html for each of them).

/** A page of the console. */
export interface Page {
  path: string;
  title: string;
}

/** The pages behind sign-in, in menu order. */
export const pages: Page[] = [
  { path: "/storage", title: "Storage" },
  { path: "/vagrant", title: "Vagrant" },
  { path: "/clusters", title: "Clusters" },
  { path: "/volumes", title: "Volumes" },
  { path: "/backups", title: "Backups" },
  { path: "/activity", title: "Activity" },
  { path: "/admin", title: "Admin" },
];

export const signInPath = "/signin";

/** What pageFor answers for a path that names no page: the console shows "Page not found". */
export const notFound = "not-found";

/**
 * The page to show for a location path: sign-in when signed out; a known page (a trailing
 * slash ignored); the home page for "/" and for /signin once signed in; else notFound.
 */
export function pageFor(path: string, signedIn: boolean): string {
  if (!signedIn) return signInPath;
  const clean = path.replace(/\/+$/, "") || "/";
  if (clean === "/" || clean === signInPath) return pages[0].path;
  const p = pages.find((pg) => pg.path === clean);
  return p ? p.path : notFound;
}

/** Where to go once signed in from path: the page it names, or the path itself when none. */
export function afterSignIn(path: string): string {
  const p = pageFor(path, true);
  return p === notFound ? path : p;
}
