import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** How a connection's bytes go: both ways as they come, unless a test decides otherwise. */
export type Relay = (inbound: Socket, outbound: Socket) => void;
const pipeBothWays: Relay = (inbound, outbound) => void inbound.pipe(outbound).pipe(inbound);

/**
 * A TCP forwarder on 127.0.0.1 to a real server of the stack, which the test opens, cuts and
 * opens again: the server appears late or goes away for the code under test, without touching
 * the shared stack. `port` 0 takes a free port on the first `open`; the same port afterwards.
 * `relay`: what passes each way (by default everything).
 */
export function tcpProxy(target: { host: string; port: number }, port = 0, relay: Relay = pipeBothWays) {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  return {
    get port() {
      return port;
    },
    async open() {
      server = createServer((inbound) => {
        const outbound = connect(target.port, target.host);
        for (const s of [inbound, outbound]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        relay(inbound, outbound);
      });
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as { port: number }).port;
    },
    /** Breaks every connection and stops listening: the port refuses connections. */
    async cut() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
      server = null;
    },
  };
}

/** A port nothing listens on (taken from the system, then given back). */
export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
