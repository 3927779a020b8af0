import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createMongoClient, ping } from '../../src/db/client';
import { waitFor } from '../helpers/events';
import { privateDatabase } from '../helpers/private-stack';

/**
 * MONGO_URL's tlsCAFile and tlsCertificateKeyFile are read again when they change: the driver
 * reads them once, when the client first connects, and reuses that copy for every later
 * connection. The case: the database's certificates are renewed under a new CA (cert-manager
 * rotating its issuer, or a managed database's CA rotation) while the service runs; the mounted
 * files are replaced. A private FerretDB over TLS (scripts/stack.sh, STACK_MONGO_TLS_PORT; with a
 * CA file it requires a client certificate), started again with the second CA's certificates on
 * the same ports: the same client, never made again, connects with the new files.
 */
const PORT = Number(process.env.MONGO_TLS_ROTATION_TEST_PORT ?? 27700);
const TLS_PORT = PORT + 1;
let dir = '';
const file = (name: string) => path.join(dir, name);
/** A file replaced as Kubernetes replaces a mounted Secret's: a new file renamed over the old one. */
const replace = (name: string, from: string) => {
  writeFileSync(file(`${name}.new`), readFileSync(from));
  renameSync(file(`${name}.new`), file(name));
};

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cag-mongo-tls-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('a CA and client certificate renewed in their files while the service runs: the same client reconnects with the new ones, no restart', async () => {
  const first = path.join(dir, 'tls-1');
  const second = path.join(dir, 'tls-2');
  let db = await privateDatabase(PORT, { STACK_MONGO_TLS_PORT: String(TLS_PORT), STACK_TLS_DIR: first });
  replace('ca.pem', `${first}/ca.pem`);
  replace('client.pem', `${first}/client-bundle.pem`);
  const client = createMongoClient(`mongodb://127.0.0.1:${TLS_PORT}/?tls=true&tlsCAFile=${file('ca.pem')}&tlsCertificateKeyFile=${file('client.pem')}`);
  try {
    await client.connect();
    await ping(client.db('x'));

    // The server comes back with certificates of another CA (its stack makes a new one in tls-2),
    // and requires client certificates of that CA; the service's files are replaced.
    await db.remove();
    db = await privateDatabase(PORT, { STACK_MONGO_TLS_PORT: String(TLS_PORT), STACK_TLS_DIR: second });
    expect(readFileSync(`${second}/ca.pem`, 'utf8')).not.toBe(readFileSync(`${first}/ca.pem`, 'utf8'));
    replace('ca.pem', `${second}/ca.pem`);
    replace('client.pem', `${second}/client-bundle.pem`);
    const answered = await waitFor(
      () =>
        ping(client.db('x')).then(
          () => true,
          () => false,
        ),
      Boolean,
      20000,
    );
    expect(answered).toBe(true);
  } finally {
    await client.close();
    await db.remove();
  }
}, 120000);
