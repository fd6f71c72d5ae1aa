// The console's pages and their paths (the gateway serves index.html for each of them).

/** A page of the console. */
export interface Page {
  path: string;
  title: string;
}

/** The pages behind sign-in, in menu order. */
export const pages: Page[] = [
  { path: "/overview", title: "Overview" },
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

/** Where a location path leads: a page and, on an object's own path, the object's id. */
export interface Route {
  /** A page's path, signInPath or notFound. */
  page: string;
  /** The object the path names (a cluster's name), decoded; "" on the page itself. */
  id: string;
  /** The path the object's id follows ("/vagrant/jobs"); "" on the page itself. */
  prefix?: string;
}

/** The paths whose last segment names an object, and the page each belongs to. */
export const objectPaths: Record<string, string> = {
  "/clusters": "/clusters",
  "/vagrant/jobs": "/vagrant",
  "/volumes": "/volumes",
  "/backups": "/backups",
};

/** The path of object id on page (its id encoded as one path segment). */
export function objectPath(page: string, id: string): string {
  return `${page}/${encodeURIComponent(id)}`;
}

/**
 * Where path leads: sign-in when signed out; a known page (a trailing slash ignored); an
 * object of a page that has object paths; the home page for "/" and for /signin once signed
 * in; else notFound.
 */
export function routeFor(path: string, signedIn: boolean): Route {
  if (!signedIn) return { page: signInPath, id: "" };
  const clean = path.replace(/\/+$/, "") || "/";
  if (clean === "/" || clean === signInPath) return { page: pages[0].path, id: "" };
  if (pages.some((pg) => pg.path === clean)) return { page: clean, id: "" };
  const slash = clean.lastIndexOf("/");
  const parent = clean.slice(0, slash);
  if (slash > 0 && Object.hasOwn(objectPaths, parent)) {
    try {
      const id = decodeURIComponent(clean.slice(slash + 1));
      if (id && !id.includes("/")) return { page: objectPaths[parent], id, prefix: parent };
    } catch {
      // a malformed escape names no object
    }
  }
  return { page: notFound, id: "" };
}

/** The path a route is shown under (its canonical spelling). */
export function routePath(r: Route): string {
  return r.id ? objectPath(r.prefix ?? r.page, r.id) : r.page;
}

/** The page to show for a location path (routeFor without the object). */
export function pageFor(path: string, signedIn: boolean): string {
  return routeFor(path, signedIn).page;
}

/** Where to go once signed in from path: the page or object it names, or the path itself when none. */
export function afterSignIn(path: string): string {
  const r = routeFor(path, true);
  return r.page === notFound ? path : routePath(r);
}
