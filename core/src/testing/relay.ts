/**
 * A TCP relay between the vault and its database that a test can break the way networks
 * break: the server refusing connections (a restart), or a partition, where nothing arrives
 * and nothing is closed, so neither side learns of it from the network.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface Relay {
  port: number;
  /** `url` with its host and port replaced by the relay's. */
  through(url: string): string;
  /** Closes every relayed connection and refuses new ones, as a stopped server does. */
  refuse(): void;
  /**
   * Forwards nothing more in either direction and closes nothing: a connection closed on one
   * side stays open on the other. New connections are accepted and left unanswered.
   */
  partition(): void;
  /** Connections cut off by a partition are reset (as their first packets after it would be), and new ones are relayed again. */
  heal(): void;
  /**
   * Ends a partition short enough for TCP to ride out: what was held back is delivered on the
   * same connections, except from a side that closed meanwhile, whose unsent data is lost.
   */
  resume(): void;
  close(): Promise<void>;
}

export async function startRelay(targetPort: number, targetHost = '127.0.0.1'): Promise<Relay> {
  let state: 'open' | 'refusing' | 'partitioned' = 'open';
  const pairs = new Set<[Socket, Socket]>();
  const held = new Set<Socket>();

  const relay = (client: Socket) => {
    const upstream = connect(targetPort, targetHost);
    upstream.on('error', () => {});
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      // In a partition a close does not travel to the other side.
      if (state === 'partitioned') return;
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('close', end);
    upstream.on('close', end);
  };
  const server = createServer((client) => {
    client.on('error', () => {});
    if (state === 'refusing') return void client.destroy();
    if (state === 'partitioned') return void held.add(client);
    relay(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  const destroyAll = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
    for (const socket of held) socket.destroy();
    held.clear();
  };

  return {
    port,
    through: (url) => url.replace(/@[^/@]+\//, `@127.0.0.1:${port}/`),
    refuse() {
      state = 'refusing';
      destroyAll();
    },
    partition() {
      state = 'partitioned';
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    heal() {
      destroyAll();
      state = 'open';
    },
    resume() {
      state = 'open';
      for (const pair of pairs) {
        const [client, upstream] = pair;
        if (client.destroyed || upstream.destroyed) {
          client.destroy();
          upstream.destroy();
          pairs.delete(pair);
          continue;
        }
        client.pipe(upstream);
        upstream.pipe(client);
      }
      for (const client of held) if (!client.destroyed) relay(client);
      held.clear();
    },
    async close() {
      destroyAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
