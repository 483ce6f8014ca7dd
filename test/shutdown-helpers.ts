/** Set-up for the shutdown suite: a database connection that can be made to hang or drop. */
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay between the vault and its PostgreSQL server. `freeze()` keeps every connection
 * open but stops passing bytes either way, as a server that hangs or a network that drops
 * packets does; `cut()` resets them all and refuses new ones, as a server that went away does.
 */
export class TcpRelay {
  private readonly sockets = new Set<Socket>();
  private frozen = false;
  private server: Server | undefined;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
        this.sockets.add(from);
        from.on('data', (chunk) => {
          if (!this.frozen) to.write(chunk);
        });
        from.on('error', () => {});
        from.on('close', () => {
          this.sockets.delete(from);
          to.destroy();
        });
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  /** The URL with host and port replaced by the relay's. */
  via(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  freeze(): void {
    this.frozen = true;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.resetAndDestroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
