import type { Subscription } from 'rxjs';
import type { ConfigSnapshot } from '../config/store.js';
import { CoreStats, HttpCore, type AuthProvider } from './core.js';
import { RateLimits, type Category, type Limit, type SharedCounters } from './rateLimits.js';
import { buildRoutes, type RoutesFace } from './routes/index.js';
import { listenUws } from './uws.js';
import { listenNodeHttp } from './nodeHttp.js';
import { PoseSocket, type PoseSocketFace } from './ws/endpoint.js';
import type { Form } from './forms.js';
import { Dashboard, defaultDashboardDir, serveDashboard } from './dashboard.js';
import type { Outlet, OutletStreams } from '../outlets/outlet.js';

export interface ServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Overrides config `server.response_form` as the deployment default. */
  form?: Form;
  /** Multiplies every rate limit (`--rate-limit-scale`). */
  rateLimitScale: number;
  /** uWebSockets.js (the service) or Node's http (the side-by-side benchmark; no WebSocket). */
  transport?: 'uws' | 'node';
  /**
   * The web dashboard at `/`: the folder of its build (default `dist/web` of this package), or
   * false for none (`--no-dashboard`; `/` is then a 404 like any unknown path). A folder without
   * a build is logged and served as none.
   */
  dashboard?: string | false;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/**
 * What the server uses of the service: what its routes use ({@link RoutesFace}), what `/ws/pose`
 * checks at upgrade ({@link PoseSocketFace}), credentials checks for the HTTP core, and, with
 * several api nodes on one Redis, where the rate-limit counters are shared.
 */
export type ServerFace = RoutesFace & PoseSocketFace & { readonly auth: AuthProvider; readonly sharedCounters?: SharedCounters };

/** A listening server. */
export interface HttpServer {
  readonly host: string;
  readonly port: number;
  readonly core: HttpCore;
  /** The `/ws/pose` endpoint (absent on the Node transport); its fan-out gets frames once `socket.start(streams)` subscribes it. */
  readonly socket: PoseSocket | undefined;
  /** The dashboard served at `/`, when there is one (never on the Node transport). */
  readonly dashboard: Dashboard | undefined;
  /** Stops listening and closes every WebSocket (1001). */
  close(): void;
}

function rateLimitConfig(c: ConfigSnapshot): Partial<Record<Category, Limit>> {
  return c.rate_limits;
}

/**
 * The HTTP and WebSocket server of a service: REST under `/api/v1` (routes by resource, the HTTP
 * core's auth, limits, forms and errors), `/ws/pose` and the web dashboard's static files (`/`,
 * `/assets/*`) on one uWebSockets.js app. It holds connections and rate-limit counters, never
 * pipeline state: routes and the WebSocket read the service's face. The `/ws/pose` fan-out
 * subscribes to the service's streams only when started (`socket.start`, the `ws` outlet,
 * src/outlets/ws.ts).
 * @param svc what the server uses of the service
 * @param o address, form, limits scale, transport, dashboard, logger
 * @returns the listening server
 */
export async function startServer(svc: ServerFace, o: ServerOptions): Promise<HttpServer> {
  const form = (): Form => o.form ?? svc.config.get().server.response_form;
  const limits = new RateLimits(rateLimitConfig(svc.config.get()), o.rateLimitScale, svc.sharedCounters);
  const configSub: Subscription = svc.config.changes$.subscribe((ev) => limits.configure(rateLimitConfig(ev.config), o.rateLimitScale));
  const stats = new CoreStats();
  const core = new HttpCore({
    routes: buildRoutes(svc, stats),
    stats,
    auth: svc.auth,
    limits,
    form,
    onError: (e, req) => o.log('error', `${req.method} ${req.path}: ${(e as Error).stack ?? String(e)}`),
  });
  try {
    if (o.transport === 'node') {
      const { server, port } = await listenNodeHttp(core, o.host, o.port);
      return {
        host: o.host,
        port,
        core,
        socket: undefined,
        dashboard: undefined,
        close: () => {
          configSub.unsubscribe();
          server.close();
        },
      };
    }
    let dashboard: Dashboard | undefined;
    if (o.dashboard !== false) {
      try {
        dashboard = Dashboard.load(o.dashboard ?? defaultDashboardDir());
      } catch (e) {
        o.log('warn', `no dashboard: ${(e as Error).message}`);
      }
    }
    let socket: PoseSocket | undefined;
    const server = await listenUws(core, o.host, o.port, (app) => {
      socket = new PoseSocket(app, svc, core, { form, log: o.log, limits });
      if (dashboard) serveDashboard(app, dashboard, core);
    }).catch((e: unknown) => {
      socket?.close();
      throw e;
    });
    return {
      host: o.host,
      port: server.port,
      core,
      socket,
      dashboard,
      close: () => {
        configSub.unsubscribe();
        socket?.close();
        server.close();
      },
    };
  } catch (e) {
    configSub.unsubscribe();
    throw e;
  }
}

/**
 * The server as the `ws` outlet: `start` listens (REST, `/ws/pose`, the dashboard, on one
 * uWebSockets.js app) and subscribes the `/ws/pose` fan-out to the service's streams; `close`
 * stops listening and closes every WebSocket (1001). It lives here, not in src/outlets, because
 * the server stands above the outlets (nothing below it imports it).
 */
export class ServerOutlet implements Outlet {
  readonly name = 'ws';
  private listening: HttpServer | undefined;

  /**
   * @param face what the routes and the WebSocket read of the service
   * @param options address, form, limits scale, transport, dashboard, logger
   */
  constructor(
    private readonly face: ServerFace,
    private readonly options: ServerOptions,
  ) {}

  /** The listening server (once started). */
  get server(): HttpServer {
    if (!this.listening) throw new Error('the server has not started');
    return this.listening;
  }

  async start(streams: OutletStreams): Promise<void> {
    this.listening = await startServer(this.face, this.options);
    this.listening.socket?.start(streams);
  }

  close(): void {
    this.listening?.close();
  }
}
