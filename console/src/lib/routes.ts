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

/** The page to show for a location path: a known page, else the first (the home page). */
export function pageFor(path: string, signedIn: boolean): string {
  if (!signedIn) return signInPath;
  const clean = path.replace(/\/+$/, "") || "/";
  const p = pages.find((pg) => pg.path === clean);
  return p ? p.path : pages[0].path;
}
