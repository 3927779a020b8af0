import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { brokerProbe } from '../../src/kafka';
import { createLogger } from '../../src/log';

/**
 * A connection the broker's side resets (a broker restarting, a load balancer dropping idle
 * connections, a network blip) is an outage, retried and said as one: never a setting to fix.
 * Before, a reset was read as "TLS against a plaintext listener" (KAFKA_SSL=on) or "plaintext
 * against a TLS listener" (KAFKA_SSL=off), and logged once as a setting error, its retries at
 * debug only. Real sockets: a TLS server that completes the handshake, then resets; a TCP one
 * that resets at the first request.
 */
let dir = '';
const servers: net.Server[] = [];
const log = createLogger('silent');

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cag-kafka-reset-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      'key.pem',
      '-out',
      'cert.pem',
    ],
    {
      cwd: dir,
      stdio: 'ignore',
    },
  );
});
afterAll(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function listen(server: net.Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

test('KAFKA_SSL=on: a connection reset after the TLS handshake names no setting (not "is it a plaintext listener?")', async () => {
  const server = tls.createServer({ key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) });
  // The TCP socket under the TLS one is reset (a TLS socket has no reset of its own).
  const raw = new Map<number, net.Socket>();
  server.on('connection', (socket: net.Socket) => raw.set(socket.remotePort!, socket));
  server.on('secureConnection', (socket) => socket.once('data', () => raw.get(socket.remotePort!)?.resetAndDestroy()));
  const broker = await listen(server);
  const probe = brokerProbe({ KAFKA_BROKERS: [broker], KAFKA_SSL: 'on', KAFKA_SSL_CA_FILE: path.join(dir, 'cert.pem') }, log, { cacheMs: 0, timeoutMs: 5000 });
  expect(await probe.reachable()).toBe(false);
  expect(probe.failure()?.message).toMatch(/ECONNRESET/);
  expect(probe.why()).toEqual({
    reason: expect.stringMatching(new RegExp(`^Kafka broker ${broker} not reachable \\(KAFKA_BROKERS\\): .*ECONNRESET`)),
    setting: null,
  });
  await probe.close();
});

test('KAFKA_SSL=off: a connection reset names no setting (not "if it is a TLS listener, set KAFKA_SSL=on")', async () => {
  const server = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
  const broker = await listen(server);
  const probe = brokerProbe({ KAFKA_BROKERS: [broker], KAFKA_SSL: 'off' }, log, { cacheMs: 0, timeoutMs: 5000 });
  expect(await probe.reachable()).toBe(false);
  expect(probe.failure()?.message).toMatch(/ECONNRESET/);
  expect(probe.why()).toEqual({ reason: expect.stringMatching(/not reachable \(KAFKA_BROKERS\): .*ECONNRESET/), setting: null });
  await probe.close();
});
