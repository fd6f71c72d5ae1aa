// The clients of the suite's services, all through the gateway that served the page (same
// origin, Connect protocol in binary). Plinth services take the auth token as a bearer token;
// vagrant-server's Vagrant API takes a Vagrant login token — the one its SessionTokenService
// issued to this session — and Vagrant's protocol header.
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { isUnauthenticated } from "./errors";
import { AuthService } from "../gen/services/auth/auth_pb";
import { AdminService } from "../gen/plinth/auth/v1/admin_pb";
import { OIDCService } from "../gen/plinth/auth/v1/oidc_pb";
import { StatsService } from "../gen/stats/stats_pb";
import { HistoryService } from "../gen/plinth/stats/v1/history_pb";
import { ClusterService } from "../gen/plinth/stats/v1/cluster_pb";
import { Cluster } from "../gen/cnct/kaas/api/api_pb";
import { Vagrant } from "../gen/hashicorp/vagrant/server_pb";
import { LVService, VGService } from "../gen/lvmd/lvmd_pb";
import { CatalogService } from "../gen/plinth/cnpgi/v1/catalog_pb";
import { JobService } from "../gen/plinth/lvmd/v1/jobs_pb";
import { VolumeService } from "../gen/plinth/lvmd/v1/volumes_pb";
import { RunnerService } from "../gen/plinth/vagrant/v1/runners_pb";
import { ClusterInfoService } from "../gen/plinth/kaas/v1/clusters_pb";
import { SessionTokenService } from "../gen/plinth/vagrant/v1/session_tokens_pb";

/** Every client the views use. */
export interface Clients {
  auth: Client<typeof AuthService>;
  admin: Client<typeof AdminService>;
  /** auth's OpenID providers (public: the sign-in page lists them before anyone signs in). */
  oidc: Client<typeof OIDCService>;
  stats: Client<typeof StatsService>;
  /** stats' usage history (the Storage page's capacity plot) and activity (the Activity page). */
  history: Client<typeof HistoryService>;
  /** stats' detail of the storage cluster: health checks, pools, OSDs, crashes (the Storage page). */
  cluster: Client<typeof ClusterService>;
  kaas: Client<typeof Cluster>;
  /** kaas's own read-only view: catalog, causes, timeline (the Clusters pages). */
  kaasInfo: Client<typeof ClusterInfoService>;
  lv: Client<typeof LVService>;
  vg: Client<typeof VGService>;
  /** lvmd-agent's backup and restore jobs (the Volumes page). */
  lvmdJobs: Client<typeof JobService>;
  /** lvmd-agent's volumes in detail: group, device path, holder (the Volumes pages). */
  volumes: Client<typeof VolumeService>;
  /** cnpgi-plugin's catalog (the Backups page). */
  catalog: Client<typeof CatalogService>;
  /** vagrant-server's runner list, with the Plinth token (not a vagrant one). */
  runners: Client<typeof RunnerService>;
  /** vagrant-server's Vagrant tokens for this session, asked for with the Plinth token. */
  sessionTokens: Client<typeof SessionTokenService>;
  /** vagrant-server with the session's Vagrant token (null until it was issued). */
  vagrant: Client<typeof Vagrant> | null;
}

/** The Vagrant API range this console speaks (vagrant-server refuses calls without it). */
export const vagrantProtocol = "1,1";

function baseUrl(): string {
  return typeof window === "undefined" ? "http://127.0.0.1:8080" : window.location.origin;
}

/**
 * Builds the clients. onUnauthenticated is called when a Plinth service refuses the token
 * (revoked, expired): the session is over. onVagrantRefused is called when vagrant-server
 * refuses the Vagrant token (expired, or revoked with the Plinth token): the caller asks for a
 * new one, which a live session gets and an ended one is refused (ending the session).
 */
export function makeClients(
  token: string,
  vagrantToken: string,
  onUnauthenticated: (message: string) => void,
  fetchImpl?: typeof globalThis.fetch, // tests pass their own
  onVagrantRefused?: () => void,
): Clients {
  const bearer: Interceptor = (next) => async (req) => {
    if (token) req.header.set("authorization", `Bearer ${token}`);
    try {
      return await next(req);
    } catch (err) {
      if (token && isUnauthenticated(err)) {
        onUnauthenticated(err.rawMessage);
      }
      throw err;
    }
  };
  const plinth = createConnectTransport({ baseUrl: baseUrl(), useBinaryFormat: true, interceptors: [bearer], fetch: fetchImpl });
  const vagrantHeaders: Interceptor = (next) => async (req) => {
    req.header.set("client-api-protocol", vagrantProtocol);
    req.header.set("authorization", vagrantToken);
    try {
      return await next(req);
    } catch (err) {
      if (isUnauthenticated(err)) onVagrantRefused?.();
      throw err;
    }
  };
  const vagrant = createConnectTransport({ baseUrl: baseUrl(), useBinaryFormat: true, interceptors: [vagrantHeaders], fetch: fetchImpl });
  return {
    auth: createClient(AuthService, plinth),
    admin: createClient(AdminService, plinth),
    oidc: createClient(OIDCService, plinth),
    stats: createClient(StatsService, plinth),
    history: createClient(HistoryService, plinth),
    cluster: createClient(ClusterService, plinth),
    kaas: createClient(Cluster, plinth),
    kaasInfo: createClient(ClusterInfoService, plinth),
    lv: createClient(LVService, plinth),
    vg: createClient(VGService, plinth),
    lvmdJobs: createClient(JobService, plinth),
    volumes: createClient(VolumeService, plinth),
    catalog: createClient(CatalogService, plinth),
    runners: createClient(RunnerService, plinth),
    sessionTokens: createClient(SessionTokenService, plinth),
    vagrant: vagrantToken ? createClient(Vagrant, vagrant) : null,
  };
}
