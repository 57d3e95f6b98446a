/**
 * The baseline of the fan-out benchmark: a plain `ws` WebSocketServer that speaks just enough of
 * the `/ws/pose` protocol for the benchmark's clients (`connection_established`, `subscribe` ->
 * `subscription_confirmed`, `pose_update`) and broadcasts with a loop of `client.send`.
 */
import type { AddressInfo } from 'node:net';
import type { Observable, Subscription } from 'rxjs';
import { WebSocketServer, type WebSocket } from 'ws';
import type { PoseFrameView, FrameShape } from '../../src/render/view.js';
import type { Form } from '../../src/render/frame.js';
import { poseShape, readMessage, subscriptionId } from '../../src/server/ws/protocol.js';

interface Group {
  readonly id: string;
  readonly shape: FrameShape;
  readonly members: Set<WebSocket>;
}

/**
 * The plain broadcast. Per pose frame it does the work `Fanout.pose` does, except the transport and
 * the fan-out: for every distinct filter set (grouped by the same `subscriptionId` of the same
 * normalised filters) the frame is rendered and serialised once by the same `view.json(shape, id,
 * wrap)` call with the same `pose_update` wrapper; then the message goes to each member by
 * `client.send` in a loop, where uWS publishes to a topic in C++. The text is encoded to UTF-8 once
 * per set (as uWS copies the bytes once per publish) so the loop is the best plain `ws` broadcast,
 * not one that re-encodes the string for every client. No auth, limits or slow-client handling:
 * that is what "plain" means; the clients never trigger them in ours either.
 */
export class PlainWsBroadcast {
  private readonly wss: WebSocketServer;
  private readonly groups = new Map<string, Group>();
  private readonly sockets = new Set<WebSocket>();
  private sub: Subscription | undefined;
  /** Frames broadcast and messages handed to `send`. */
  readonly stats = { frames: 0, sends: 0 };

  private constructor(
    wss: WebSocketServer,
    readonly port: number,
    private readonly form: () => Form,
  ) {
    this.wss = wss;
  }

  /**
   * Listens on 127.0.0.1 (a free port) and subscribes to the pose stream.
   * @param pose$ the service's pose stream (the same one `/ws/pose` fans out)
   * @param form the connections' response form (the deployment default, as `/ws/pose` picks it)
   */
  static async listen(pose$: Observable<PoseFrameView>, form: () => Form): Promise<PlainWsBroadcast> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 1024 * 1024, backlog: 4096 });
    await new Promise<void>((ok, fail) => {
      wss.once('listening', ok);
      wss.once('error', fail);
    });
    const b = new PlainWsBroadcast(wss, (wss.address() as AddressInfo).port, form);
    wss.on('connection', (ws) => b.opened(ws));
    b.sub = pose$.subscribe((v) => b.pose(v));
    return b;
  }

  /** Open connections. */
  get connections(): number {
    return this.sockets.size;
  }

  /** A new connection: greeted as `/ws/pose` greets, and forgotten (with its memberships) when it closes. */
  private opened(ws: WebSocket): void {
    this.sockets.add(ws);
    ws.on('error', () => undefined);
    ws.on('close', () => {
      this.sockets.delete(ws);
      for (const [id, g] of this.groups) if (g.members.delete(ws) && g.members.size === 0) this.groups.delete(id);
    });
    ws.on('message', (data, isBinary) => this.message(ws, data.toString(), isBinary));
    ws.send(JSON.stringify({ type: 'connection_established', client_id: `plain_${this.sockets.size}`, server_time: new Date().toISOString() }));
  }

  /** A client message: a pose_updates `subscribe`, read and normalised by the real protocol code. */
  private message(ws: WebSocket, text: string, isBinary: boolean): void {
    try {
      if (isBinary) throw new Error('binary message');
      const m = readMessage(JSON.parse(text));
      if (m.type !== 'subscribe' || m.request.channel !== 'pose_updates') throw new Error('only pose_updates subscriptions here');
      const id = subscriptionId(m.request, this.form());
      let g = this.groups.get(id);
      if (!g) {
        g = { id, shape: poseShape(m.request.filters, this.form()), members: new Set() };
        this.groups.set(id, g);
      }
      g.members.add(ws);
      ws.send(JSON.stringify({ type: 'subscription_confirmed', channel: 'pose_updates', subscription_id: id, filters_applied: m.request.filters }));
    } catch (e) {
      ws.send(JSON.stringify({ type: 'error', code: 'VALIDATION_ERROR', message: (e as Error).message }));
    }
  }

  /** One pose frame to every member of every filter set: serialised once per set, sent in a loop. */
  private pose(view: PoseFrameView): void {
    this.stats.frames++;
    for (const g of this.groups.values()) {
      const msg = view.json(g.shape, g.id, (frame) => {
        const { timestamp, ...data } = frame;
        return { type: 'pose_update', subscription_id: g.id, timestamp, data };
      });
      const bytes = Buffer.from(msg);
      for (const ws of g.members) ws.send(bytes, { binary: false });
      this.stats.sends += g.members.size;
    }
  }

  /** Stops broadcasting, drops every connection and stops listening. */
  async close(): Promise<void> {
    this.sub?.unsubscribe();
    for (const ws of this.sockets) ws.terminate();
    await new Promise<void>((ok) => this.wss.close(() => ok()));
  }
}
