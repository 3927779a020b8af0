import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';

/**
 * Kafka frames: a 4-byte size, then (requests) api key int16, api version int16, correlation id
 * int32, or (responses) the correlation id int32. Produce is api key 0.
 */
const produceCorrelationId = (chunk: unknown): number | null =>
  Buffer.isBuffer(chunk) && chunk.length >= 12 && chunk.readInt16BE(4) === 0 ? chunk.readInt32BE(8) : null;

/**
 * The network between a kafkajs client and a real broker, with faults on demand (kafkajs's
 * `socketFactory` option; its default, kafkajs/src/network/socketFactory.js, is `net.connect`).
 *
 * - `loseNextProduceResponse()`: the next Produce request reaches the broker, which appends the
 *   batch and answers; the answer never arrives (the connection breaks as it comes in), and from
 *   then on the network is down. The fault of a broker that stops right after an append, or of
 *   a link that fails between a request and its response.
 * - `down()` / `up()`: every new connection is refused (existing ones break on `down`).
 * - `silence()`: every connection, open or new, goes quiet: what is written is dropped, nothing
 *   comes back, nothing is closed (a firewall or NAT that forgot the connections: no reset ever
 *   comes). `up()` lets new connections through; the quiet ones stay quiet.
 */
export function faultyNetwork() {
  let state: 'up' | 'lose-produce-response' | 'down' | 'silent' = 'up';
  const open = new Set<net.Socket>();
  const quiet = new WeakSet<net.Socket>();
  let lost = 0;

  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    // Port 1 answers nothing here: a connection refused, as by a stopped broker.
    const socket = state === 'down' ? net.connect({ host: '127.0.0.1', port: 1 }) : net.connect({ host, port }, onConnect);
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    // The answer to drop is the one to that Produce request, found by its correlation id: the
    // connection may carry other requests' answers before it.
    let losing: number | null = null;
    if (state === 'silent') quiet.add(socket);
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((...args: unknown[]) => {
      if (quiet.has(socket)) {
        const done = args.find((a) => typeof a === 'function') as (() => void) | undefined;
        done?.();
        return true;
      }
      const produce = produceCorrelationId(args[0]);
      if (state === 'lose-produce-response' && produce !== null) {
        losing = produce;
        state = 'down';
      }
      return write(...args);
    }) as typeof socket.write;
    // Incoming bytes are passed on a whole frame at a time (kafkajs takes any chunking), so the
    // frame whose answer is lost is seen before any of it reaches kafkajs.
    let inbound = Buffer.alloc(0);
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event !== 'data') return emit(event, ...args);
      if (quiet.has(socket)) return true;
      inbound = Buffer.concat([inbound, args[0] as Buffer]);
      while (inbound.length >= 8) {
        if (inbound.readInt32BE(4) === losing) {
          lost++;
          // As a broker process that dies: the connection is reset (kafkajs listens for 'error' and 'end').
          socket.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
          return true;
        }
        const end = 4 + inbound.readInt32BE(0);
        if (inbound.length < end) break;
        const frame = inbound.subarray(0, end);
        inbound = inbound.subarray(end);
        emit('data', frame);
      }
      return true;
    }) as typeof socket.emit;
    return socket;
  };

  return {
    socketFactory,
    loseNextProduceResponse() {
      state = 'lose-produce-response';
    },
    down() {
      state = 'down';
      for (const s of open) s.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    },
    up() {
      state = 'up';
    },
    silence() {
      state = 'silent';
      for (const s of open) quiet.add(s);
    },
    /** Produce responses lost so far. */
    lostResponses: () => lost,
  };
}
