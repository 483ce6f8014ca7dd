/**
 * A TCP relay between the vault (or the sidecar) and its database that a test can break the
 * way networks break: the server refusing connections (a restart), or a partition, where
 * nothing arrives and nothing is closed, so neither side learns of it from the network.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface Relay {
  port: number;
  /** `url` with its host and port replaced by the relay's. */
  through(url: string): string;
  /** Closes every relayed connection and refuses new ones, as a stopped server does. */
  refuse(): void;
  /**
   * Forwards nothing more in either direction and closes nothing: what either side sends is
   * held back (as its kernel holds what the network does not acknowledge), a side that
   * closes is not seen closing by the other, and new connections are left unanswered.
   */
  partition(): void;
  /** Connections cut off by a partition are reset (as their first packets after it would be), and new ones are relayed again. */
  heal(): void;
  /**
   * Ends a partition short enough for TCP to ride out: what was held back is delivered, a
   * side's close after it, except from a side that reset its connection meanwhile, whose held
   * data a reset discards.
   */
  resume(): void;
  close(): Promise<void>;
}

/** One direction of a relayed connection, and what a partition holds back of it. */
class Flow {
  held: Buffer[] = [];
  ended = false;
  reset = false;
  private readonly hold = (chunk: Buffer) => this.held.push(chunk);
  private readonly sawEnd = () => (this.ended = true);
  private readonly sawReset = (err: NodeJS.ErrnoException) => (this.reset ||= err.code === 'ECONNRESET');

  constructor(
    readonly from: Socket,
    readonly to: Socket,
  ) {
    from.pipe(to);
  }

  cut(): void {
    this.from.unpipe(this.to);
    this.from.on('data', this.hold);
    this.from.on('end', this.sawEnd);
    this.from.on('error', this.sawReset);
  }

  /** Delivers what was held back; false if the sending side reset and the connection must go. */
  restore(): boolean {
    this.from.off('data', this.hold);
    this.from.off('end', this.sawEnd);
    this.from.off('error', this.sawReset);
    const held = this.held;
    this.held = [];
    if (this.reset) return false;
    for (const chunk of held) this.to.write(chunk);
    if (this.ended) this.to.end();
    else this.from.pipe(this.to);
    return true;
  }
}

export async function startRelay(targetPort: number, targetHost = '127.0.0.1'): Promise<Relay> {
  let state: 'open' | 'refusing' | 'partitioned' = 'open';
  const pairs = new Set<[Flow, Flow]>();
  const held = new Set<Socket>();

  const destroyPair = (pair: [Flow, Flow]) => {
    pair[0].from.destroy();
    pair[0].to.destroy();
    pairs.delete(pair);
  };
  const relay = (client: Socket) => {
    const upstream = connect(targetPort, targetHost);
    upstream.on('error', () => {});
    const pair: [Flow, Flow] = [new Flow(client, upstream), new Flow(upstream, client)];
    pairs.add(pair);
    const end = () => {
      // In a partition a close does not travel to the other side.
      if (state !== 'partitioned') destroyPair(pair);
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
    for (const pair of pairs) destroyPair(pair);
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
      for (const [up, down] of pairs) {
        up.cut();
        down.cut();
      }
    },
    heal() {
      destroyAll();
      state = 'open';
    },
    resume() {
      state = 'open';
      for (const pair of pairs) {
        const [up, down] = pair;
        const delivered = up.restore() && down.restore();
        if (!delivered || (up.from.destroyed && up.to.destroyed)) destroyPair(pair);
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
