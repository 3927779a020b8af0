import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';

/** Kafka's request header starts after the 4-byte size: api key (int16); Produce is 0. */
const isProduceRequest = (chunk: unknown) => Buffer.isBuffer(chunk) && chunk.length >= 6 && chunk.readInt16BE(4) === 0;

/**
 * The network between a kafkajs client and a real broker, with faults on demand (kafkajs's
 * `socketFactory` option; its default, kafkajs/src/network/socketFactory.js, is `net.connect`).
 *
 * - `loseNextProduceResponse()`: the next Produce request reaches the broker, which appends the
 *   batch and answers; the answer never arrives (the connection breaks as it comes in), and from
 *   then on the network is down. The fault of a broker that stops right after an append, or of
 *   a link that fails between a request and its response.
 * - `down()` / `up()`: every new connection is refused (existing ones break on `down`).
 */
export function faultyNetwork() {
  let state: 'up' | 'lose-produce-response' | 'down' = 'up';
  const open = new Set<net.Socket>();
  let lost = 0;

  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    // Port 1 answers nothing here: a connection refused, as by a stopped broker.
    const socket = state === 'down' ? net.connect({ host: '127.0.0.1', port: 1 }) : net.connect({ host, port }, onConnect);
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    let losing = false;
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((...args: unknown[]) => {
      if (state === 'lose-produce-response' && isProduceRequest(args[0])) {
        losing = true;
        state = 'down';
      }
      return write(...args);
    }) as typeof socket.write;
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event === 'data' && losing) {
        lost++;
        // As a broker process that dies: the connection is reset (kafkajs listens for 'error' and 'end').
        socket.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
        return true;
      }
      return emit(event, ...args);
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
    /** Produce responses lost so far. */
    lostResponses: () => lost,
  };
}
