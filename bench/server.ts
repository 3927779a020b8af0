/**
 * The process under load in `npm run bench`, started by bench/suite.ts with `fork`: the real
 * service (startService, configured from the environment) and, in the same process, the
 * ceiling: a bare Koa route doing one primary-key findOne on the users collection. It reports
 * its ports once, and its resident memory and requests in flight every 100 ms, over IPC; on
 * request it collects garbage and reports its live heap (writing a heap snapshot if asked), and
 * it stops.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeHeapSnapshot } from 'node:v8';
import Koa from 'koa';
import { loadConfig } from '../src/config';
import { COLLECTIONS, type UserDoc } from '../src/db/collections';
import { createLogger } from '../src/log';
import { startService } from '../src/runtime';

export type ServerMessage =
  | { type: 'ready'; servicePort: number; ceilingPort: number }
  | { type: 'sample'; rss: number; inFlight: number }
  | { type: 'heap'; heapUsed: number; heapTotal: number; external: number; rss: number };

/** Asks of the parent: `heap` (with `snapshot`, a file to write the heap snapshot to) or `stop`. */
export type ServerRequest = { type: 'heap'; snapshot?: string } | { type: 'stop' };

let inFlight = 0;

/**
 * Counts requests until their handler finishes, not until the socket closes: when autocannon
 * stops, the requests it abandons keep the database busy, and the next row must not start
 * before they are done.
 */
function countInFlight(server: Server): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => unknown)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    Promise.resolve(handlers.map((h) => h(req, res))[0]).finally(() => inFlight--);
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const running = await startService(config, createLogger(config.LOG_LEVEL));
  await running.ready;

  const users = running.db.collection<UserDoc>(COLLECTIONS.users);
  const ceiling = new Koa();
  ceiling.use(async (ctx) => {
    const doc = await users.findOne({ _id: ctx.path.slice(1) });
    ctx.status = doc ? 200 : 404;
    ctx.body = doc ?? { detail: 'Not found.' };
  });
  const ceilingServer = ceiling.listen(0, '127.0.0.1');
  await new Promise((resolve) => ceilingServer.once('listening', resolve));

  const send = (m: ServerMessage) => process.send?.(m);
  countInFlight(running.server!);
  countInFlight(ceilingServer);
  const sampler = setInterval(() => send({ type: 'sample', rss: process.memoryUsage.rss(), inFlight }), 100);
  send({ type: 'ready', servicePort: running.port!, ceilingPort: (ceilingServer.address() as AddressInfo).port });

  process.on('message', async (m: ServerRequest) => {
    if (m.type === 'heap') {
      // Forked with --expose-gc: what is still reachable, not what awaits collection.
      (globalThis as { gc?: () => void }).gc?.();
      if (m.snapshot) writeHeapSnapshot(m.snapshot);
      const { heapUsed, heapTotal, external, rss } = process.memoryUsage();
      send({ type: 'heap', heapUsed, heapTotal, external, rss });
      return;
    }
    if (m.type !== 'stop') return;
    clearInterval(sampler);
    ceilingServer.closeAllConnections();
    ceilingServer.close();
    await running.stop();
    process.exit(0);
  });
  process.on('disconnect', () => process.exit(0));
}

main().catch((err) => {
  process.stderr.write(`bench server failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
